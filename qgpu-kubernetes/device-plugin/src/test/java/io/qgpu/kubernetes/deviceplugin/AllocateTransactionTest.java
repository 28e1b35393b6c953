package io.qgpu.kubernetes.deviceplugin;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Health;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.Topology;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementEngine;
import io.qgpu.kubernetes.node.PlacementEdits;
import io.qgpu.kubernetes.node.sharing.SharingOptions;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@code Allocate} as one transaction, a failure injected at each of its steps (the state that cannot be
 * saved, before or after writing, its undo failing too; an answer that throws; a host directory that cannot be
 * created; a decision mark that cannot be set; an undo onto a GPU that turned unhealthy): the ledger, the
 * allocations (in their order), the state file and HAMi-core's cache directories are as before the call, and
 * the same request succeeds once the fault is gone.
 */
class AllocateTransactionTest {
    static final String A = VirtualDevice.idOf("GPU-0", 0);
    static final String B = VirtualDevice.idOf("GPU-1", 3);

    @TempDir
    Path tmp;
    Path root;
    Path stateFile;
    FlakyStore store;
    Ledger ledger;
    ContainerEnvironment env;
    VirtualDevicePool pool;

    /** What one call must leave as it found it. */
    record Snapshot(List<Placement> ledger, List<Allocation> allocations, byte[] file, Set<String> dirs) {
    }

    @BeforeEach
    void pool() throws Exception {
        root = tmp.resolve("hami-cache");
        stateFile = tmp.resolve("state.json");
        Path lib = Files.writeString(tmp.resolve("libvgpu.so"), "any file");
        env = new ContainerEnvironment(new PlacementEdits(Map.of("GPU-0", 0, "GPU-1", 1), SharingOptions.parse(Map.of(
                "--sharing", "hami-core", "--hami-core-library", lib.toString(), "--hami-core-cache-root", root.toString(),
                "--hami-core-lock-dir", tmp.resolve("vgpulock").toString())).open()));
        pool = pool(PodDecisions.none());
    }

    VirtualDevicePool pool(PodDecisions decisions) {
        List<GpuDevice> gpus = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            gpus.add(GpuDevice.builder("GPU-" + i).index(i).model("H100").memoryBytes(80 * GpuDevice.GIB).build());
        }
        Node node = new Node("node-a", Map.of(), gpus, Topology.uniform(2, new GpuLink.NvLink(18)));
        ledger = Ledger.create(GranularityRules.custom().maxTenantsPerGpu(4).memoryPerTenantSlotBytes(0).build(), List.of(node));
        store = new FlakyStore(new StateFile(stateFile));
        VirtualDevicePool p = new VirtualDevicePool(node, ledger, PlacementEngine.create(ledger), decisions, store, GpuDevice.GIB);
        p.restore();
        return p;
    }

    List<Allocation> allocate(List<List<String>> containers) {
        return pool.allocate(containers, (a, tx) -> env.response(a, tx));
    }

    /** Two allocations held: A on GPU-0, then B on GPU-1, each with its cache directory. */
    void twoHeld() {
        allocate(List.of(List.of(A)));
        allocate(List.of(List.of(B)));
        assertEquals(Set.of("GPU-0__0", "GPU-1__3"), dirs());
    }

    Snapshot snapshot() throws IOException {
        List<Placement> held = ledger.placements().stream().sorted(Comparator.comparing(Placement::tenantId)).toList();
        return new Snapshot(held, pool.allocations(), Files.exists(stateFile) ? Files.readAllBytes(stateFile) : new byte[0], dirs());
    }

    Set<String> dirs() {
        if (!Files.isDirectory(root)) {
            return Set.of(Files.exists(root) ? "<root is a file>" : "<no root>");
        }
        try (Stream<Path> all = Files.walk(root)) {
            return all.filter(p -> !p.equals(root) && Files.isDirectory(p)).map(p -> root.relativize(p).toString())
                    .collect(java.util.stream.Collectors.toCollection(TreeSet::new));
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    void assertAsBefore(Snapshot before, boolean fileToo) throws IOException {
        Snapshot now = snapshot();
        assertEquals(before.ledger().stream().map(Placement::tenantId).toList(), now.ledger().stream().map(Placement::tenantId).toList(),
                "the ledger's tenants");
        assertEquals(before.ledger(), now.ledger(), "the ledger");
        assertEquals(before.allocations(), now.allocations(), "the allocations, in their order");
        assertEquals(before.dirs(), now.dirs(), "the cache directories");
        if (fileToo && before.file().length == 0) {
            // none before: the undo may have saved the empty state
            assertEquals(List.of(), new StateFile(stateFile).load("node-a").orElse(List.of()), "the state file holds nothing");
        } else if (fileToo) {
            assertArrayEquals(before.file(), now.file(), "the state file, byte for byte");
        }
    }

    /** One container: a new id first (a new directory) and A's id handed out again (A released). */
    static final List<List<String>> REQUEST = List.of(List.of(VirtualDevice.idOf("GPU-1", 0), A));

    void retrySucceeds() {
        List<Allocation> got = allocate(REQUEST);
        assertEquals(1, got.size());
        assertEquals(List.of(B, VirtualDevice.idOf("GPU-1", 0)),
                pool.allocations().stream().map(a -> a.deviceIds().get(0)).toList(), "B, then the new one; A released");
        assertEquals(Set.of("GPU-0__0", "GPU-1__0", "GPU-1__3"), dirs(), "A's directory is the reconciler's to remove");
        assertEquals(pool.allocations(), new StateFile(stateFile).load("node-a").orElseThrow());
    }

    @ParameterizedTest(name = "the save fails {0}")
    @EnumSource(FlakyStore.Failure.class)
    void aSaveThatFailsLeavesEverythingAsBefore(FlakyStore.Failure how) throws Exception {
        twoHeld();
        Snapshot before = snapshot();
        store.failNext(how);
        PluginException e = assertThrows(PluginException.class, () -> allocate(REQUEST));
        assertEquals(Status.Code.INTERNAL, e.code());
        assertTrue(e.getMessage().contains("injected"), e.getMessage());
        assertAsBefore(before, true);
        retrySucceeds();
    }

    @ParameterizedTest(name = "the save fails {0}, and so does the undo's save")
    @EnumSource(FlakyStore.Failure.class)
    void aSaveWhoseUndoFailsTooIsMadeGoodByEnsureSaved(FlakyStore.Failure how) throws Exception {
        twoHeld();
        Snapshot before = snapshot();
        store.failNext(how, FlakyStore.Failure.BEFORE_WRITING);
        PluginException e = assertThrows(PluginException.class, () -> allocate(REQUEST));
        assertEquals(Status.Code.INTERNAL, e.code());
        assertEquals(1, e.getCause().getSuppressed().length, "the undo that failed is reported with the refusal");
        assertAsBefore(before, how == FlakyStore.Failure.BEFORE_WRITING);
        pool.ensureSaved();   // the reconciler's state-file step
        assertAsBefore(before, true);
        retrySucceeds();
    }

    @Test
    void anAnswerThatThrowsTakesBackTheContainersBeforeIt() throws Exception {
        twoHeld();
        Snapshot before = snapshot();
        List<List<String>> two = List.of(List.of(VirtualDevice.idOf("GPU-1", 1)), List.of(VirtualDevice.idOf("GPU-0", 2), B));
        PluginException e = assertThrows(PluginException.class, () -> pool.allocate(two, (a, tx) -> {
            env.response(a, tx);
            if (a.deviceIds().contains(B)) {
                throw new IllegalStateException("injected: no answer");
            }
        }));
        assertEquals(Status.Code.INTERNAL, e.code());
        assertAsBefore(before, true);
        assertFalse(Files.exists(root.resolve("GPU-1__1")), "the first container's directory is gone");
        retrySucceeds();
    }

    @Test
    void aCacheRootThatIsAFileRefusesTheCallAndTakesItBack() throws Exception {
        twoHeld();
        ContainerEnvironment.removeTree(root);
        Files.writeString(root, "not a directory");
        Snapshot before = snapshot();
        PluginException e = assertThrows(PluginException.class, () -> allocate(REQUEST));
        assertEquals(Status.Code.INTERNAL, e.code());
        assertTrue(e.getMessage().contains("cannot be prepared"), e.getMessage());
        assertAsBefore(before, true);

        Files.delete(root);
        Files.createDirectories(root.resolve("GPU-0__0"));
        Files.createDirectories(root.resolve("GPU-1__3"));
        retrySucceeds();
    }

    @ParameterizedTest(name = "the failing mark written first: {0}")
    @org.junit.jupiter.params.provider.ValueSource(booleans = {false, true})
    void aMarkThatFailsTakesBackTheDirectoriesToo(boolean writeThenFail) throws Exception {
        AllocateDecisionRollbackTest.FailingDecisions d = new AllocateDecisionRollbackTest.FailingDecisions("infer/second", writeThenFail);
        d.inner.pod("infer", "first", 8, 10, 50, "GPU-0").pod("infer", "second", 8, 10, 50, "GPU-1");
        pool = pool(d);
        Snapshot before = snapshot();
        List<List<String>> request = List.of(List.of(VirtualDevice.idOf("GPU-0", 1)), List.of(VirtualDevice.idOf("GPU-1", 1)));
        PluginException e = assertThrows(PluginException.class, () -> allocate(request));
        assertEquals(Status.Code.UNAVAILABLE, e.code());
        assertAsBefore(before, true);
        assertEquals(List.of("infer/first", "infer/second"), d.withdrawn);
        assertEquals(Map.of(), d.inner.applied);

        d.failing = false;
        assertEquals(List.of("infer/first", "infer/second"), allocate(request).stream().map(Allocation::tenantId).toList());
        assertEquals(Set.of("GPU-0__1", "GPU-1__1"), dirs());
    }

    /**
     * A's GPU turns unhealthy; a call that hands A's id out again fails: A is given back, and the ledger holds
     * it again although an unhealthy GPU takes no new reservation.
     */
    @Test
    void anAllocationGivenBackOnAnUnhealthyGpuIsHeldInTheLedgerAgain() throws Exception {
        twoHeld();
        pool.setHealth("GPU-0", Health.UNHEALTHY);
        Snapshot before = snapshot();
        store.failNext(FlakyStore.Failure.BEFORE_WRITING);
        assertThrows(PluginException.class, () -> allocate(REQUEST));
        assertAsBefore(before, true);
        assertTrue(ledger.placement("devices/" + A).isPresent());
    }
}
