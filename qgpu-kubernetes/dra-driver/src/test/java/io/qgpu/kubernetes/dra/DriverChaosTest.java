package io.qgpu.kubernetes.dra;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.resource.v1.Device;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSlice;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.grpc.ManagedChannel;
import io.qgpu.kubernetes.dra.pluginregistration.PluginInfo;
import io.qgpu.kubernetes.dra.v1.DRAPluginGrpc;
import io.qgpu.kubernetes.node.FaultyApiServer;
import io.qgpu.kubernetes.node.mps.FakeMpsControlScript;
import io.qgpu.kubernetes.node.mps.MpsLayout;
import io.qgpu.kubernetes.node.mps.MpsSupervisor;
import io.qgpu.kubernetes.node.reconcile.NodeReconciler;
import io.qgpu.kubernetes.node.sharing.SharingOptions;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The DRA driver under a seeded sequence of prepares (that fit or not), unprepares, claims deleted behind the
 * kubelet's back and swept, Xid events and recoveries, API server outages longer than the client's retries,
 * restarts, and kills at the worst moment (right after a save, before the side effects or the answer: the
 * node's files are put back as they were at that instant and a new driver starts on them, as after
 * {@code kill -9}). After every step the node must converge: the reconciler's pass holds, and the prepared claims,
 * the ledger, the state file, the CDI specs, the HAMi-core cache directories and the published slice all agree
 * with what the kubelet was told; nothing leaked, nothing lost.
 *
 * <p>{@link #theChaosRunCatchesAStoreThatLosesAClaim} runs the same sequence with a broken claim store (it drops
 * the oldest claim when it saves more than one) and must fail: the invariants are strong enough to see lost state.
 */
class DriverChaosTest extends DriverTestBase {
    static final int STEPS = 70;
    static final NodeReconciler.Settings SETTINGS = new NodeReconciler.Settings(Duration.ofHours(1), Duration.ofSeconds(1),
            Duration.ofSeconds(4));
    static final long GIB = 1L << 30;

    FaultyApiServer api;
    Path cacheRoot;
    Path lib;

    @BeforeEach
    void api() throws IOException {
        api = new FaultyApiServer();
        cacheRoot = tmp.resolve("hami-cache");
        lib = Files.writeString(tmp.resolve("libvgpu.so"), "any file");
    }

    @AfterEach
    void closeApi() {
        api.close();
    }

    /** Saves through; when armed, records the node's files as they are right after the save (a kill at that instant). */
    static final class KillAfterSave implements ClaimStore {
        final ClaimStore real;
        final Function<ClaimStore, ClaimStore> broken;
        boolean armed;
        NodeFiles atKill;
        final Runnable snapshot;

        KillAfterSave(ClaimStore real, Runnable snapshot) {
            this.real = real;
            this.broken = null;
            this.snapshot = snapshot;
        }

        @Override
        public void save(List<PreparedClaim> claims) {
            real.save(claims);
            if (armed) {
                armed = false;
                snapshot.run();
            }
        }

        @Override
        public Optional<ClaimStore.Saved> load() {
            return real.load();
        }
    }

    /** A broken store for the self-test: drops the oldest claim whenever it saves more than one. */
    static final class LosesTheOldest implements ClaimStore {
        final ClaimStore real;

        LosesTheOldest(ClaimStore real) {
            this.real = real;
        }

        @Override
        public void save(List<PreparedClaim> claims) {
            real.save(claims.size() > 1 ? claims.subList(1, claims.size()) : claims);
        }

        @Override
        public Optional<ClaimStore.Saved> load() {
            return real.load();
        }
    }

    /** The node's files: state file, CDI specs, cache directories (with their files). */
    record NodeFiles(Optional<byte[]> state, Map<String, byte[]> specs, Map<String, Map<String, byte[]>> caches) {
    }

    final class Run {
        final Random rnd;
        final Function<ClaimStore, ClaimStore> storeWrap;
        /** With {@code --sharing mps} (the fake {@code nvidia-cuda-mps-control}) and daemon deaths; else hami-core. */
        final boolean mps;
        FakeMpsControlScript fakeMps;
        MpsLayout layout;
        final KubernetesClient client = api.client();
        final Map<String, String> prepared = new TreeMap<>();     // uid -> name: what the kubelet was told is prepared
        final Set<String> exclusive = new TreeSet<>();
        final Map<String, String> pending = new LinkedHashMap<>(); // allocated on the API server, not prepared (uid -> name)
        final Set<String> deleted = new TreeSet<>();               // prepared, then deleted from the API server
        final List<String> log = new ArrayList<>();
        final Map<String, Integer> kinds = new TreeMap<>();
        DraDriver d;
        KillAfterSave killer;
        ManagedChannel channel;
        int names;

        Run(long seed, Function<ClaimStore, ClaimStore> storeWrap) {
            this(seed, storeWrap, false);
        }

        Run(long seed, Function<ClaimStore, ClaimStore> storeWrap, boolean mps) {
            this.rnd = new Random(seed);
            this.storeWrap = storeWrap;
            this.mps = mps;
        }

        DriverConfig config() throws IOException {
            SharingOptions sharing;
            if (mps) {
                if (fakeMps == null) {
                    fakeMps = FakeMpsControlScript.write(Files.createDirectories(tmp.resolve("bin")));
                    layout = new MpsLayout(tmp.resolve("mps"));
                }
                sharing = SharingOptions.parse(Map.of("--sharing", "mps", "--mps-root", layout.root().toString(), "--mps-control",
                        fakeMps.binary.toString(), "--mps-daemons", "agent")).withMpsTickEvery(Duration.ZERO);
            } else {
                sharing = SharingOptions.parse(Map.of("--sharing", "hami-core", "--hami-core-library", lib.toString(),
                        "--hami-core-cache-root", cacheRoot.toString(), "--hami-core-lock-dir", tmp.resolve("lock").toString()));
            }
            return DriverTestBase_config().withSharing(sharing).withReconcile(SETTINGS, Duration.ZERO).withBootId(Optional.of("boot-1"));
        }

        /** The GPUs' UUIDs, in slice order. */
        List<String> gpuUuids() {
            return d.slices().slice().getSpec().getDevices().stream().map(x -> x.getAttributes().get("uuid").getString()).toList();
        }

        void start() throws IOException {
            d = DraDriver.start(config(), client, real -> {
                killer = new KillAfterSave(storeWrap.apply(real), () -> killer.atKill = files());
                return killer;
            });
            PluginInfo info = register();
            channel = kubelet.dial(Path.of(info.getEndpoint()));
        }

        void stop() {
            d.close();
        }

        DRAPluginGrpc.DRAPluginBlockingStub stub() {
            return DRAPluginGrpc.newBlockingStub(channel).withDeadlineAfter(Kubelet.DEADLINE_SECONDS, TimeUnit.SECONDS);
        }

        String prepare(String name, String uid) {
            return Kubelet.prepare(stub(), Kubelet.claim(Claims.NS, name, uid)).getClaimsOrThrow(uid).getError();
        }

        String unprepare(String name, String uid) {
            return Kubelet.unprepare(stub(), Kubelet.claim(Claims.NS, name, uid)).getClaimsOrThrow(uid).getError();
        }

        String newClaim() {
            String name = "c" + (names++);
            String device = "gpu-" + rnd.nextInt(4);
            String uid;
            if (rnd.nextInt(8) == 0) {
                uid = Claims.allocated(client, name, Claims.whole(device));
                exclusive.add(uid);
            } else {
                uid = Claims.allocated(client, name, Claims.share(device, (1 + rnd.nextInt(6)) + "Gi", Integer.toString(5 * (1 + rnd.nextInt(8))),
                        null));
            }
            pending.put(uid, name);
            return uid;
        }

        void seen(String kind) {
            kinds.merge(kind, 1, Integer::sum);
        }

        void step(int i) throws Exception {
            int op = rnd.nextInt(100);
            if (op < 30) {
                String uid = newClaim();
                String e = prepare(pending.get(uid), uid);
                log.add(i + " prepare " + uid + ": " + (e.isEmpty() ? "ok" : e));
                seen(e.isEmpty() ? "prepare" : "refused prepare");
                if (e.isEmpty()) {
                    prepared.put(uid, pending.remove(uid));
                }
            } else if (op < 40 && !pending.isEmpty()) {
                String uid = pick(pending.keySet());
                String e = prepare(pending.get(uid), uid);
                log.add(i + " retry " + uid + ": " + (e.isEmpty() ? "ok" : e));
                if (e.isEmpty()) {
                    prepared.put(uid, pending.remove(uid));
                }
            } else if (op < 55 && !prepared.isEmpty()) {
                String uid = pick(prepared.keySet());
                String e = unprepare(prepared.get(uid), uid);
                log.add(i + " unprepare " + uid);
                seen("unprepare");
                assertEquals("", e);
                prepared.remove(uid);
                deleted.remove(uid);
            } else if (op < 62 && !prepared.isEmpty()) {
                String uid = pick(prepared.keySet());
                client.resources(ResourceClaim.class).inNamespace(Claims.NS).withName(prepared.get(uid)).delete();
                deleted.add(uid);
                log.add(i + " deleted on the API server " + uid);
            } else if (op < 68) {
                List<String> swept = d.sweep();
                log.add(i + " sweep " + swept);
                seen(swept.isEmpty() ? "sweep" : "sweep of stale claims");
                assertEquals(List.copyOf(deleted.stream().filter(prepared::containsKey).toList()).stream().sorted().toList(),
                        swept.stream().sorted().toList(), "the sweep unprepares exactly the deleted claims");
                swept.forEach(prepared::remove);
                deleted.clear();
            } else if (op < 75) {
                int gpu = rnd.nextInt(4);
                assertEquals(1, FAKE.fake_nvml_inject_xid(gpu, 48));
                awaitGone("gpu-" + gpu);
                log.add(i + " xid on gpu-" + gpu);
                seen("xid");
            } else if (op < 80) {
                clock.addAndGet(RECOVER_AFTER.toNanos());
                List<String> back = d.health().recoverDue();
                log.add(i + " recovered " + back);
                seen(back.isEmpty() ? "recovery check" : "recovery");
            } else if (op < 87) {
                String uid = newClaim();
                api.down();
                try {
                    String e = Kubelet.prepare(stub(), Kubelet.claim(Claims.NS, pending.get(uid), uid)).getClaimsOrThrow(uid).getError();
                    assertTrue(e.contains("cannot be read from the API server"), e);
                    log.add(i + " outage: prepare refused, sweep " + d.sweep());
                    int gpu = rnd.nextInt(4);
                    FAKE.fake_nvml_inject_xid(gpu, 48);
                    awaitGone("gpu-" + gpu);
                    d.reconciler().reconcile();
                    seen("outage");
                } finally {
                    api.up();
                }
            } else if (mps && op < 90) {
                // a daemon dies (SIGKILL); the supervisor notices at its next check and starts another
                List<String> uuids = List.copyOf(d.mps().orElseThrow().status().keySet());
                String gpu = uuids.get(rnd.nextInt(uuids.size()));
                long pid = FakeMpsControlScript.liveDaemons(layout, gpu).get(0);
                FakeMpsControlScript.crash(pid);
                log.add(i + " MPS daemon of " + gpu + " killed");
                seen("daemon death");
            } else if (op < 93) {
                stop();
                start();
                log.add(i + " restart");
                seen("restart");
            } else {
                // a kill right after a save: of a prepare (before its spec, directory and answer) or of an unprepare
                killer.armed = true;
                if (rnd.nextBoolean() || prepared.isEmpty()) {
                    String uid = newClaim();
                    String e = prepare(pending.get(uid), uid);
                    if (killer.atKill != null) {
                        prepared.put(uid, pending.remove(uid));   // saved: the kubelet's retry after the restart finds it
                    }
                    log.add(i + " kill -9 after the save of prepare " + uid + " (" + (e.isEmpty() ? "saved" : e) + ")");
                    seen("kill after a prepare's save");
                } else {
                    String uid = pick(prepared.keySet());
                    unprepare(prepared.get(uid), uid);
                    prepared.remove(uid);
                    deleted.remove(uid);
                    log.add(i + " kill -9 after the save of unprepare " + uid);
                    seen("kill after an unprepare's save");
                }
                killer.armed = false;
                NodeFiles at = killer.atKill;
                stop();
                if (at != null) {
                    putBack(at);
                }
                start();
            }
        }

        String pick(Set<String> from) {
            List<String> l = List.copyOf(from);
            return l.get(rnd.nextInt(l.size()));
        }

        void awaitGone(String device) {
            long deadline = System.nanoTime() + Kubelet.DEADLINE_SECONDS * 1_000_000_000L;
            while (d.slices().slice().getSpec().getDevices().stream().anyMatch(x -> x.getName().equals(device))) {
                assertTrue(System.nanoTime() < deadline, "the driver never took the Xid of " + device + " in");
                Thread.onSpinWait();
            }
        }

        /** The node converges and every record agrees with what the kubelet was told. */
        void check(int i) throws Exception {
            if (mps) {
                // the supervisor's checks and restarts run on its own schedule: let it catch up
                MpsSupervisor sup = d.mps().orElseThrow();
                for (int t = 0; t < 10 && sup.status().values().stream().anyMatch(x -> x.state() != MpsSupervisor.State.RUNNING
                        || !alive(x.gpuUuid())); t++) {
                    clock.addAndGet(Duration.ofSeconds(61).toNanos());
                    sup.tick();
                }
            }
            NodeReconciler.Report r = d.reconciler().reconcileNow();
            String at = "after step " + i + ": " + log.get(log.size() - 1);
            assertTrue(r.converged(), at + ": " + r.failures());
            Set<String> want = prepared.keySet();
            assertEquals(want, uids(d.claims().all().stream().map(PreparedClaim::uid)), at + ": prepared claims");
            assertEquals(want, uids(d.claims().ledgerTenants().stream()), at + ": the ledger");
            assertEquals(want, uids(new DriverStateFile(state, "node-a", Optional.of("boot-1")).load()
                    .map(ClaimStore.Saved::claims).orElse(List.of()).stream()
                    .map(PreparedClaim::uid)), at + ": the state file");
            assertEquals(want.stream().map(u -> "qgpu.io-gpu_" + u + ".json").collect(Collectors.toCollection(TreeSet::new)),
                    new TreeSet<>(list(cdi)), at + ": the CDI specs");
            assertEquals(mps ? Set.of() : want.stream().filter(u -> !exclusive.contains(u)).collect(Collectors.toCollection(TreeSet::new)),
                    new TreeSet<>(list(cacheRoot)), at + ": the cache directories");
            if (mps) {
                for (String gpu : gpuUuidsAll()) {
                    assertEquals(1, FakeMpsControlScript.liveDaemons(layout, gpu).size(), at + ": one live MPS daemon on " + gpu);
                }
            }
            ResourceSlice s = client.resources(ResourceSlice.class).withName("node-a-gpu.qgpu.io").get();
            assertEquals(d.slices().slice().getSpec().getDevices().stream().map(Device::getName).toList(),
                    s.getSpec().getDevices().stream().map(Device::getName).toList(), at + ": the published slice");
        }

        boolean alive(String gpu) {
            try {
                return FakeMpsControlScript.liveDaemons(layout, gpu).size() == 1;
            } catch (IOException e) {
                return false;
            }
        }

        /** Every GPU the supervisor shares: the node's, less those an exclusive claim holds; healthy or not. */
        Set<String> gpuUuidsAll() {
            return d.mps().orElseThrow().status().keySet();
        }

        void run() throws Exception {
            // a clean node and API server for each run
            client.resources(ResourceClaim.class).inAnyNamespace().delete();
            client.resources(ResourceSlice.class).delete();
            putBack(new NodeFiles(Optional.empty(), Map.of(), Map.of()));
            start();
            try {
                for (int i = 0; i < STEPS; i++) {
                    step(i);
                    check(i);
                }
            } finally {
                stop();
                if (mps) {
                    FakeMpsControlScript.killAll(layout);   // the driver's stop leaves its daemons running
                }
            }
        }
    }

    DriverConfig DriverTestBase_config() {
        return config("t4x4");
    }

    static Set<String> uids(Stream<String> s) {
        return s.collect(Collectors.toCollection(TreeSet::new));
    }

    static List<String> list(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).filter(n -> !n.startsWith(".")).sorted().toList();
        }
    }

    NodeFiles files() {
        try {
            Optional<byte[]> st = Files.exists(state) ? Optional.of(Files.readAllBytes(state)) : Optional.empty();
            Map<String, byte[]> specs = new TreeMap<>();
            for (String f : list(cdi)) {
                specs.put(f, Files.readAllBytes(cdi.resolve(f)));
            }
            Map<String, Map<String, byte[]>> caches = new TreeMap<>();
            for (String dir : list(cacheRoot)) {
                Map<String, byte[]> content = new TreeMap<>();
                for (String f : list(cacheRoot.resolve(dir))) {
                    content.put(f, Files.readAllBytes(cacheRoot.resolve(dir).resolve(f)));
                }
                caches.put(dir, content);
            }
            return new NodeFiles(st, specs, caches);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    void putBack(NodeFiles f) throws IOException {
        if (f.state().isPresent()) {
            Files.write(state, f.state().get());
        } else {
            Files.deleteIfExists(state);
        }
        for (String s : list(cdi)) {
            Files.delete(cdi.resolve(s));
        }
        for (Map.Entry<String, byte[]> e : f.specs().entrySet()) {
            Files.write(cdi.resolve(e.getKey()), e.getValue());
        }
        for (String dir : list(cacheRoot)) {
            try (Stream<Path> s = Files.walk(cacheRoot.resolve(dir))) {
                for (Path p : s.sorted(java.util.Comparator.reverseOrder()).toList()) {
                    Files.delete(p);
                }
            }
        }
        for (Map.Entry<String, Map<String, byte[]>> e : f.caches().entrySet()) {
            Path dir = Files.createDirectories(cacheRoot.resolve(e.getKey()));
            for (Map.Entry<String, byte[]> c : e.getValue().entrySet()) {
                Files.write(dir.resolve(c.getKey()), c.getValue());
            }
        }
    }

    @Test
    void threeSeedsConvergeAfterEveryStep() throws Exception {
        Map<String, Integer> kinds = new TreeMap<>();
        for (long seed = 1; seed <= 3; seed++) {
            Run r = new Run(seed, s -> s);
            r.run();
            r.kinds.forEach((k, n) -> kinds.merge(k, n, Integer::sum));
        }
        // the runs met every kind of step (so the invariants were checked after each)
        assertEquals(Set.of("kill after a prepare's save", "kill after an unprepare's save", "outage", "prepare", "recovery",
                "refused prepare", "restart", "sweep of stale claims", "unprepare", "xid"),
                kinds.keySet().stream().filter(k -> !k.equals("sweep") && !k.equals("recovery check")).collect(Collectors.toSet()),
                kinds.toString());
    }

    @Test
    void underMpsWithDaemonDeathsTooTheNodeConverges() throws Exception {
        Run r = new Run(4, s -> s, true);
        r.run();
        assertTrue(r.kinds.containsKey("daemon death") && r.kinds.containsKey("restart") && r.kinds.containsKey("prepare"), r.kinds.toString());
    }

    @Test
    void theChaosRunCatchesAStoreThatLosesAClaim() {
        AssertionError e = assertThrows(AssertionError.class, () -> new Run(1, LosesTheOldest::new).run());
        assertTrue(e.getMessage().contains("after step"), e.getMessage());
    }
}
