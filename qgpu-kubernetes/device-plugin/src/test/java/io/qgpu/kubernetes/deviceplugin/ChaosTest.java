package io.qgpu.kubernetes.deviceplugin;

import static io.qgpu.kubernetes.deviceplugin.LifecycleTest.uuidOf;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.StatusRuntimeException;
import io.qgpu.api.Health;
import io.qgpu.api.Placement;
import io.qgpu.kubernetes.deviceplugin.v1beta1.AllocateRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ContainerAllocateRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.DevicePluginGrpc;
import io.qgpu.kubernetes.node.reconcile.NodeReconciler;
import io.qgpu.kubernetes.node.sharing.SharingOptions;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A seeded random run of the whole plugin ({@code --sharing hami-core} on the fake t4x4: 4 GPUs, 16 ids) over
 * {@value #STEPS} steps per seed: {@code Allocate}s through gRPC (valid ones, ids handed out again, replicas that
 * fit only unevenly, unknown ids), each possibly with an injected fault (the state that cannot be saved, before
 * or after writing, its undo's save failing too; the cache root a regular file, so no host directory can be
 * created), Xid events from the fake NVML and recoveries, directories a crash left in the cache root, and
 * plugin restarts from the same state file.
 *
 * <p>After every step: a refused {@code Allocate} left the ledger, the allocations (in order), the cache
 * directories and (unless the undo's save was made to fail) the state file exactly as before it; an answered
 * one kept every allocation that shares no id with it and holds one allocation per container; and after one
 * {@code reconciler().reconcile()} the node has converged: the ledger holds exactly the live allocations'
 * reservations, the state file holds the live allocations, the cache directories are exactly the live
 * allocations' keys, and the device-list subscriber was sent the current list.
 *
 * <p>Shown to catch seeded bugs within its step budget: with the undo that releases the engine's placement on
 * the ids' home GPUs removed from {@code VirtualDevicePool.place} (the missing undo), seeds 11, 23 and
 * 37 failed at steps 18, 18 and 2 (a refused call left its reservation in the ledger); with an allocation given
 * back by a rollback not reserved again when its GPU turned unhealthy (the ledger refuses it), at steps 9, 4 and
 * 91. About 20 s for the three seeds on a 2-core machine.
 */
class ChaosTest extends PluginTestBase {
    static final int STEPS = 200;

    @ParameterizedTest(name = "seed {0}")
    @ValueSource(longs = {11, 23, 37})
    void theNodeConvergesAfterEveryStep(long seed) throws Exception {
        Run run = new Run(seed);
        try {
            run.go();
        } finally {
            run.stopPlugin();
        }
    }

    /** What one step must leave as it found it when it is refused. */
    record Snapshot(List<Allocation> allocations, List<Placement> ledger, Set<String> dirs, byte[] file) {
    }

    final class Run {
        final long seed;
        final Random rnd;
        final FlakyStore store = new FlakyStore(new StateFile(state));
        final Path cacheRoot = tmp.resolve("hami-cache");
        final Map<String, Integer> seen = new TreeMap<>();
        final List<String> history = new ArrayList<>();
        PluginConfig cfg;
        DevicePlugin plugin;
        DevicePluginGrpc.DevicePluginBlockingStub stub;
        List<String> ids;
        final BlockingQueue<List<VirtualDevice>> lists = new LinkedBlockingQueue<>();
        final AtomicReference<List<VirtualDevice>> lastList = new AtomicReference<>();
        AutoCloseable subscription;
        int step;
        int crashes;

        Run(long seed) {
            this.seed = seed;
            this.rnd = new Random(seed);
        }

        void go() throws Exception {
            Path lib = Files.writeString(tmp.resolve("libvgpu.so"), "any file");
            cfg = config("t4x4", PodDecisions.none()).withSharing(SharingOptions.parse(Map.of("--sharing", "hami-core",
                    "--hami-core-library", lib.toString(), "--hami-core-cache-root", cacheRoot.toString(),
                    "--hami-core-lock-dir", tmp.resolve("vgpulock").toString())));
            startPlugin();
            for (step = 0; step < STEPS; step++) {
                int r = rnd.nextInt(100);
                if (r < 30) {
                    allocate("allocate", request(), null);
                } else if (r < 40) {
                    allocate("allocate, ids handed out again", handedOutAgain(), null);
                } else if (r < 50) {
                    allocate("allocate, save fails", request(), () -> store.failNext(failures()));
                } else if (r < 58) {
                    allocate("allocate, cache root a file", request(), this::cacheRootIsAFile);
                } else if (r < 62) {
                    allocate("allocate, uneven replicas", List.of(distinct(5)), null);
                } else if (r < 65) {
                    allocate("allocate, unknown id", List.of(List.of(ids.get(rnd.nextInt(ids.size())), "GPU-nope::0")), null);
                } else if (r < 75) {
                    xid();
                } else if (r < 82) {
                    recover();
                } else if (r < 88) {
                    crashLeftover();
                } else {
                    restart();
                }
                converges();
            }
            org.slf4j.LoggerFactory.getLogger(ChaosTest.class).info("seed {}: {}", seed, seen);
            assertTrue(seen.getOrDefault("allocate: answered", 0) > 0, seen.toString());
            assertTrue(seen.getOrDefault("allocate, save fails: refused", 0) > 0, seen.toString());
            assertTrue(seen.getOrDefault("allocate, cache root a file: refused", 0) > 0, seen.toString());
            assertTrue(seen.getOrDefault("allocate, ids handed out again: answered", 0) > 0, seen.toString());
            assertTrue(seen.getOrDefault("restart", 0) > 0, seen.toString());
            assertTrue(seen.getOrDefault("xid", 0) > 0, seen.toString());
        }

        // ------------------------------------------------------------------------------------------- steps

        void startPlugin() throws Exception {
            plugin = DevicePlugin.start(cfg, p -> store);
            stub = stub(kubelet.awaitRegistration());
            ids = plugin.pool().devices().stream().map(VirtualDevice::id).toList();
            lists.clear();
            subscription = plugin.pool().subscribe(l -> {
                lastList.set(l);
                lists.add(l);
            });
        }

        void stopPlugin() throws Exception {
            if (plugin != null) {
                subscription.close();
                plugin.close();
                plugin = null;
            }
        }

        void restart() throws Exception {
            List<Allocation> before = plugin.pool().allocations();
            stopPlugin();
            startPlugin();
            count("restart");
            check(before.equals(plugin.pool().allocations()), "a restart keeps the allocations: " + before + " vs "
                    + plugin.pool().allocations());
        }

        /** 1 or 2 containers of 1 or 2 random ids. */
        List<List<String>> request() {
            int containers = rnd.nextInt(4) == 0 ? 2 : 1;
            List<String> all = distinct(containers * (1 + rnd.nextInt(2)));
            List<List<String>> out = new ArrayList<>();
            int per = all.size() / containers;
            for (int c = 0; c < containers; c++) {
                out.add(all.subList(c * per, (c + 1) * per));
            }
            return out;
        }

        /** One container of ids that are all bound now (a random one when none is). */
        List<List<String>> handedOutAgain() {
            List<String> bound = new ArrayList<>();
            plugin.pool().allocations().forEach(a -> bound.addAll(a.deviceIds()));
            if (bound.isEmpty()) {
                return request();
            }
            java.util.Collections.shuffle(bound, rnd);
            return List.of(List.copyOf(bound.subList(0, Math.min(bound.size(), 1 + rnd.nextInt(2)))));
        }

        List<String> distinct(int n) {
            List<String> shuffled = new ArrayList<>(ids);
            java.util.Collections.shuffle(shuffled, rnd);
            return List.copyOf(shuffled.subList(0, n));
        }

        FlakyStore.Failure[] failures() {
            FlakyStore.Failure[] all = FlakyStore.Failure.values();
            FlakyStore.Failure[] out = new FlakyStore.Failure[1 + rnd.nextInt(2)];
            for (int i = 0; i < out.length; i++) {
                out[i] = all[rnd.nextInt(all.length)];
            }
            return out;
        }

        /** Replaces the cache root by a regular file until {@link #cacheRootBack()}. */
        void cacheRootIsAFile() {
            try {
                if (Files.exists(cacheRoot)) {
                    Files.move(cacheRoot, tmp.resolve("hami-cache.aside"));
                }
                Files.writeString(cacheRoot, "a file");
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }

        void cacheRootBack() throws Exception {
            if (Files.isRegularFile(cacheRoot)) {
                Files.delete(cacheRoot);
                if (Files.exists(tmp.resolve("hami-cache.aside"))) {
                    Files.move(tmp.resolve("hami-cache.aside"), cacheRoot);
                }
            }
        }

        void allocate(String what, List<List<String>> containers, Runnable fault) throws Exception {
            Snapshot before = snapshot();
            int failedSaves = store.failed();
            history.add(what + " " + containers);
            if (fault != null) {
                fault.run();
            }
            AllocateRequest.Builder b = AllocateRequest.newBuilder();
            containers.forEach(c -> b.addContainerRequests(ContainerAllocateRequest.newBuilder().addAllDevicesIds(c)));
            boolean answered;
            try {
                stub.allocate(b.build());
                answered = true;
            } catch (StatusRuntimeException e) {
                answered = false;
                history.add("  refused: " + e.getStatus().getCode() + " " + e.getStatus().getDescription());
            } finally {
                store.heal();
                cacheRootBack();
            }
            count(what + (answered ? ": answered" : ": refused"));
            if (!answered) {
                Snapshot now = snapshot();
                check(before.allocations().equals(now.allocations()), "a refused call leaves the allocations as they were");
                check(before.ledger().equals(now.ledger()), "a refused call leaves the ledger as it was: " + tenants(before.ledger())
                        + " vs " + tenants(now.ledger()));
                check(before.dirs().equals(now.dirs()), "a refused call leaves the directories: " + before.dirs() + " vs " + now.dirs());
                if (store.failed() - failedSaves < 2) {
                    check(java.util.Arrays.equals(before.file(), now.file()) || before.file().length == 0
                            && new StateFile(state).load("node-a").orElse(List.of()).isEmpty(), "a refused call leaves the state file");
                }
                return;
            }
            Set<String> asked = new HashSet<>();
            containers.forEach(asked::addAll);
            List<Allocation> kept = before.allocations().stream().filter(a -> a.deviceIds().stream().noneMatch(asked::contains)).toList();
            List<Allocation> now = plugin.pool().allocations();
            check(now.subList(0, Math.min(kept.size(), now.size())).equals(kept), "an answered call keeps the others, in order: "
                    + kept + " vs " + now);
            check(now.size() == kept.size() + containers.size(), "one allocation per container");
            for (List<String> c : containers) {
                check(now.stream().filter(a -> a.deviceIds().equals(c)).count() == 1, "an allocation of " + c);
            }
        }

        void xid() throws Exception {
            List<Integer> healthy = new ArrayList<>();
            for (int g = 0; g < 4; g++) {
                if (plugin.pool().healthOf(uuidOf(plugin, g)) == Health.HEALTHY) {
                    healthy.add(g);
                }
            }
            if (healthy.isEmpty()) {
                recover();
                return;
            }
            int g = healthy.get(rnd.nextInt(healthy.size()));
            String gpu = uuidOf(plugin, g);
            history.add("xid on GPU " + g);
            assertEquals(1, FAKE.fake_nvml_inject_xid(g, 48));
            // the event arrives on NVML's thread: wait (at most 20 s) for the device list that shows it
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (plugin.pool().healthOf(gpu) != Health.UNHEALTHY) {
                long left = deadline - System.nanoTime();
                check(left > 0, "the Xid on GPU " + g + " did not turn it unhealthy within 20 s");
                lists.poll(left, TimeUnit.NANOSECONDS);
            }
            count("xid");
        }

        void recover() {
            clock.addAndGet(RECOVER_AFTER.toNanos());
            List<String> back = plugin.health().recoverDue();
            history.add("recover " + back);
            for (String gpu : back) {
                check(plugin.pool().healthOf(gpu) == Health.HEALTHY, gpu + " is healthy again");
            }
            count("recover");
        }

        void crashLeftover() throws Exception {
            Path d = Files.createDirectories(cacheRoot.resolve("crashed-" + crashes++));
            Files.writeString(d.resolve("vgpu.cache"), "a crashed container's");
            history.add("crash left " + d.getFileName());
            count("crash leftover");
        }

        // ------------------------------------------------------------------------------------------ checks

        void converges() throws Exception {
            NodeReconciler.Report r = plugin.reconciler().reconcile();
            check(r.converged(), "the pass converges: " + r.failures());
            List<Allocation> live = plugin.pool().allocations();
            List<Placement> reservations = live.stream().flatMap(a -> a.reservations().stream())
                    .sorted(Comparator.comparing(Placement::tenantId)).toList();
            check(reservations.equals(ledger()), "the ledger holds the live allocations' reservations: " + tenants(reservations)
                    + " vs " + tenants(ledger()));
            check(live.equals(new StateFile(state).load("node-a").orElse(List.of())), "the state file holds the live allocations");
            Set<String> keys = live.stream().map(a -> a.deviceIds().get(0).replace(':', '_')).collect(Collectors.toCollection(TreeSet::new));
            check(keys.equals(dirs()), "the cache directories are the live allocations': " + keys + " vs " + dirs());
            check(plugin.pool().devices().equals(lastList.get()), "the subscriber was sent the current device list");
            Map<String, String> on = plugin.pool().devices().stream().collect(Collectors.toMap(VirtualDevice::id, VirtualDevice::gpu));
            for (Allocation a : live) {
                a.gpuOf().forEach((id, gpu) -> check(gpu.equals(on.get(id)), id + " is on " + gpu));
            }
        }

        List<Placement> ledger() {
            return plugin.pool().ledger().placements().stream().sorted(Comparator.comparing(Placement::tenantId)).toList();
        }

        Snapshot snapshot() throws Exception {
            return new Snapshot(plugin.pool().allocations(), ledger(), dirs(), Files.exists(state) ? Files.readAllBytes(state) : new byte[0]);
        }

        Set<String> dirs() throws Exception {
            if (!Files.isDirectory(cacheRoot)) {
                return Set.of();
            }
            try (Stream<Path> s = Files.list(cacheRoot)) {
                return s.map(p -> p.getFileName().toString()).collect(Collectors.toCollection(TreeSet::new));
            }
        }

        static List<String> tenants(List<Placement> ps) {
            return ps.stream().map(Placement::tenantId).toList();
        }

        void count(String what) {
            seen.merge(what, 1, Integer::sum);
        }

        void check(boolean ok, String what) {
            if (!ok) {
                List<String> last = history.subList(Math.max(0, history.size() - 8), history.size());
                throw new AssertionError("seed " + seed + ", step " + step + ": " + what + "\n  last steps:\n    "
                        + String.join("\n    ", last));
            }
        }
    }
}
