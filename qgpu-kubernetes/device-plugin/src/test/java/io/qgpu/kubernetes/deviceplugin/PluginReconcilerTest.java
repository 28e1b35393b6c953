package io.qgpu.kubernetes.deviceplugin;

import static io.qgpu.kubernetes.deviceplugin.LifecycleTest.uuidOf;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Health;
import io.qgpu.kubernetes.deviceplugin.v1beta1.DevicePluginGrpc;
import io.qgpu.kubernetes.node.reconcile.NodeReconciler;
import io.qgpu.kubernetes.node.sharing.SharingOptions;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The plugin's one reconciler: HAMi-core's cache directories follow the live allocations (a directory whose
 * allocation was released when its id was handed out again is removed by the next pass; one a crash left
 * behind is removed at start; a restored allocation keeps its own), a device-list subscriber that missed a
 * list is sent it again, the state file is saved again after a save whose outcome is unknown, and the
 * timer runs the passes when the plugin is configured so.
 */
class PluginReconcilerTest extends PluginTestBase {
    Path cacheRoot;
    SharingOptions hami;

    @BeforeEach
    void hamiCore() throws Exception {
        Path lib = Files.writeString(tmp.resolve("libvgpu.so"), "any file");
        cacheRoot = tmp.resolve("hami-cache");
        hami = SharingOptions.parse(Map.of("--sharing", "hami-core", "--hami-core-library", lib.toString(),
                "--hami-core-cache-root", cacheRoot.toString(), "--hami-core-lock-dir", tmp.resolve("vgpulock").toString()));
    }

    PluginConfig hamiConfig() {
        return config("t4x4", PodDecisions.none()).withSharing(hami);
    }

    Set<String> dirs() throws Exception {
        if (!Files.isDirectory(cacheRoot)) {
            return Set.of();
        }
        try (Stream<Path> s = Files.list(cacheRoot)) {
            return s.map(p -> p.getFileName().toString()).collect(Collectors.toCollection(TreeSet::new));
        }
    }

    static String key(String id) {
        return id.replace(':', '_');
    }

    @Test
    void theDirectoryOfAnAllocationWhoseIdIsHandedOutAgainIsRemovedByTheNextPass() throws Exception {
        DevicePlugin plugin = start(hamiConfig());
        DevicePluginGrpc.DevicePluginBlockingStub stub = stub(kubelet.awaitRegistration());
        String a = VirtualDevice.idOf(uuidOf(plugin, 0), 0);
        String b = VirtualDevice.idOf(uuidOf(plugin, 1), 0);
        RestartTest.allocate(stub, a);
        assertEquals(Set.of(key(a)), dirs());

        RestartTest.allocate(stub, b, a);   // a's container is gone: its allocation is released, b's is new
        assertEquals(List.of(List.of(b, a)), plugin.pool().allocations().stream().map(Allocation::deviceIds).toList());
        assertEquals(Set.of(key(a), key(b)), dirs(), "Allocate leaves the released directory to the reconciler");
        NodeReconciler.Report r = plugin.reconciler().reconcile();
        assertTrue(r.converged(), r.toString());
        assertEquals(1, r.removed());
        assertEquals(Set.of(key(b)), dirs());
        assertEquals(0, plugin.reconciler().reconcile().removed(), "idempotent");
    }

    @Test
    void aDirectoryLeftByACrashIsRemovedAtStartAndARestoredAllocationKeepsItsOwn() throws Exception {
        DevicePlugin first = start(hamiConfig());
        String a = VirtualDevice.idOf(uuidOf(first, 2), 1);
        RestartTest.allocate(stub(kubelet.awaitRegistration()), a);
        first.close();
        open.remove(first);
        Files.createDirectories(cacheRoot.resolve("GPU-gone__0"));
        Files.writeString(cacheRoot.resolve("GPU-gone__0").resolve("vgpu.cache"), "a crashed container's");
        Files.writeString(cacheRoot.resolve(key(a)).resolve("vgpu.cache"), "the running container's");

        DevicePlugin second = start(hamiConfig());
        assertEquals(Set.of(key(a)), dirs(), "the crash's directory is gone before the plugin serves");
        assertEquals("the running container's", Files.readString(cacheRoot.resolve(key(a)).resolve("vgpu.cache")),
                "a live container's directory is left as it is");
        assertEquals(1, second.pool().allocations().size());
    }

    @Test
    void aMissingDirectoryOfALiveAllocationIsCreatedAgain() throws Exception {
        DevicePlugin plugin = start(hamiConfig());
        String a = VirtualDevice.idOf(uuidOf(plugin, 0), 0);
        RestartTest.allocate(stub(kubelet.awaitRegistration()), a);
        ContainerEnvironment.removeTree(cacheRoot.resolve(key(a)));
        assertTrue(plugin.reconciler().reconcile().converged());
        assertEquals(Set.of(key(a)), dirs());
    }

    @Test
    void aSubscriberThatMissedAListIsSentItByTheNextPass() throws Exception {
        DevicePlugin plugin = start("t4x4");
        BlockingQueue<List<VirtualDevice>> got = new LinkedBlockingQueue<>();
        AtomicInteger failures = new AtomicInteger(1);
        open.add(plugin.pool().subscribe(l -> {
            if (l.stream().anyMatch(d -> d.health() == Health.UNHEALTHY) && failures.getAndDecrement() > 0) {
                throw new IllegalStateException("injected: the stream is busy");
            }
            got.add(l);
        }));
        assertEquals(16, got.remove().size());
        String gpu = uuidOf(plugin, 1);
        plugin.pool().setHealth(gpu, Health.UNHEALTHY);
        assertTrue(got.isEmpty(), "the send failed");
        assertEquals(1, plugin.pool().subscribers().size(), "a subscriber that failed stays subscribed");

        NodeReconciler.Report r = plugin.reconciler().reconcile();
        assertTrue(r.converged(), r.toString());
        assertEquals(plugin.pool().devices(), got.remove());
        plugin.reconciler().reconcile();
        assertTrue(got.isEmpty(), "sent once: the pass is idempotent");
    }

    @Test
    void aStateFileWhoseSaveFailedIsSavedAgainByTheNextPass() throws Exception {
        FlakyStore store = new FlakyStore(new StateFile(state));
        DevicePlugin plugin = DevicePlugin.start(hamiConfig(), p -> store);
        open.add(plugin);
        DevicePluginGrpc.DevicePluginBlockingStub stub = stub(kubelet.awaitRegistration());
        String a = VirtualDevice.idOf(uuidOf(plugin, 0), 0);
        RestartTest.allocate(stub, a);
        // the next call fails its save after writing, and the undo's save fails before writing:
        // the file holds the refused call's state until the reconciler saves the live allocations again
        store.failNext(FlakyStore.Failure.AFTER_WRITING, FlakyStore.Failure.BEFORE_WRITING);
        AllocateTest.assertStatus(io.grpc.Status.Code.INTERNAL, "injected",
                () -> RestartTest.allocate(stub, VirtualDevice.idOf(uuidOf(plugin, 1), 0)));
        assertEquals(2, new StateFile(state).load("node-a").orElseThrow().size(), "the refused call's state");
        assertEquals(1, plugin.pool().allocations().size());
        NodeReconciler.Report r = plugin.reconciler().reconcile();
        assertTrue(r.converged(), r.toString());
        assertEquals(plugin.pool().allocations(), new StateFile(state).load("node-a").orElseThrow());
    }

    /** On the timer: an Allocate triggers a pass that removes the released directory; bounded wait of 20 s. */
    @Test
    void onTheTimerAnAllocateTriggersAPass() throws Exception {
        DevicePlugin plugin = start(hamiConfig().withReconcileEvery(Duration.ofHours(1)));
        assertEquals(List.of("NVML session", "GPU health watch", "plugin server", "timer", "reconciler"), plugin.opened());
        DevicePluginGrpc.DevicePluginBlockingStub stub = stub(kubelet.awaitRegistration());
        String a = VirtualDevice.idOf(uuidOf(plugin, 0), 0);
        String b = VirtualDevice.idOf(uuidOf(plugin, 1), 0);
        RestartTest.allocate(stub, a);
        RestartTest.allocate(stub, b, a);
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (Files.exists(cacheRoot.resolve(key(a)))) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("no pass removed " + key(a) + " within 20 s: " + plugin.reconciler().failures());
            }
            java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);   // polls the pass's effect
        }
        assertEquals(Set.of(key(b)), dirs());
        assertFalse(Files.exists(cacheRoot.resolve(key(a))));
    }
}
