package io.qgpu.kubernetes.dra;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.Slice;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.kubernetes.dra.pluginregistration.PluginInfo;
import io.qgpu.kubernetes.dra.v1.DRAPluginGrpc;
import io.qgpu.kubernetes.dra.v1.NodePrepareResourcesRequest;
import io.qgpu.kubernetes.dra.v1.NodePrepareResourcesResponse;
import io.qgpu.kubernetes.node.CdiSpecs;
import io.qgpu.kubernetes.node.PlacementEdits;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Item 4/7: two prepares on one GPU at the same time never overcommit it, neither at once nor after a
 * restart.
 *
 * <p>{@link #theLedgerOfPreparedClaimsSavesBothOfTwoConcurrentPrepares()} runs a controlled schedule (no
 * timing): the first prepare is held inside its state write while the second runs as far as it can. With
 * {@link PreparedClaims}' lock the second waits, and the file ends with both claims; with the lock removed
 * (the {@code synchronized} of {@code PreparedClaims.prepare} deleted, checked by hand) the second saves
 * both, the first then saves its older set over it, and the restarted driver forgets the second claim,
 * whose 30 GiB a third share would then be given on an 80 GiB GPU already holding 60 GiB: the test fails
 * with "expected: <[a, b]> but was: <[a]>".
 *
 * <p>{@link #twoPreparesOfSharesThatDoNotBothFitPrepareExactlyOne()} drives two prepares through the
 * kubelet's socket at once; two guards stand between them and an overcommit: {@link PreparedClaims}' lock
 * and qgpu's {@link Ledger} (admission and compare-and-set per node). Checked by hand with both broken
 * (the lock removed, and qgpu-core's {@code Reservations.commit} admitting, yielding, then setting the node
 * state unconditionally instead of its compare-and-set): the test fails in round 1 with both 50 GiB shares
 * prepared on the 80 GiB GPU ("exactly one of the two fits: '', ''"); with either guard alone it passes.
 */
class ConcurrentPrepareTest extends DriverTestBase {
    static final long GIB = 1L << 30;

    @Test
    void twoPreparesOfSharesThatDoNotBothFitPrepareExactlyOne() throws Exception {
        start("dgx-h100");
        PluginInfo info = register();
        for (int round = 0; round < 8; round++) {
            String a = Claims.allocated(client, "a" + round, Claims.share("gpu-0", "50Gi", "50", null));
            String b = Claims.allocated(client, "b" + round, Claims.share("gpu-0", "50Gi", "50", null));
            DRAPluginGrpc.DRAPluginFutureStub sa = DRAPluginGrpc.newFutureStub(kubelet.dial(Path.of(info.getEndpoint())));
            DRAPluginGrpc.DRAPluginFutureStub sb = DRAPluginGrpc.newFutureStub(kubelet.dial(Path.of(info.getEndpoint())));
            Future<NodePrepareResourcesResponse> fa = sa.nodePrepareResources(NodePrepareResourcesRequest.newBuilder()
                    .addClaims(Kubelet.claim(Claims.NS, "a" + round, a)).build());
            Future<NodePrepareResourcesResponse> fb = sb.nodePrepareResources(NodePrepareResourcesRequest.newBuilder()
                    .addClaims(Kubelet.claim(Claims.NS, "b" + round, b)).build());
            String ea = fa.get(Kubelet.DEADLINE_SECONDS, TimeUnit.SECONDS).getClaimsOrThrow(a).getError();
            String eb = fb.get(Kubelet.DEADLINE_SECONDS, TimeUnit.SECONDS).getClaimsOrThrow(b).getError();
            assertTrue(ea.isEmpty() != eb.isEmpty(), "round " + round + ": exactly one of the two fits: '" + ea + "', '" + eb + "'");
            assertTrue((ea + eb).contains("does not fit"), ea + eb);
            DRAPluginGrpc.DRAPluginBlockingStub stub = kubelet.v1(info);
            Kubelet.unprepare(stub, Kubelet.claim(Claims.NS, "a" + round, a), Kubelet.claim(Claims.NS, "b" + round, b));
        }
    }

    /** Holds the first save until the test lets it go; later saves pass. */
    static final class HoldFirstSave implements ClaimStore {
        final ClaimStore real;
        final AtomicInteger saves = new AtomicInteger();
        final CountDownLatch firstIn = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);

        HoldFirstSave(ClaimStore real) {
            this.real = real;
        }

        @Override
        public void save(List<PreparedClaim> claims) {
            if (saves.incrementAndGet() == 1) {
                firstIn.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            real.save(claims);
        }

        @Override
        public Optional<ClaimStore.Saved> load() {
            return real.load();
        }
    }

    static PreparedClaim share(String uid, long gib) {
        Claim c = Claim.builder(uid).gpus(1).memoryBytes(gib * GIB).compute(30, 30).build();
        return new PreparedClaim(uid, "default", uid, new Placement(c, "node-a", List.of(new Slice("GPU-x", gib * GIB, 30, 30))),
                List.of(new PreparedClaim.Device(List.of("gpu"), "node-a", "gpu-0", Optional.empty(), "GPU-x", List.of())));
    }

    PreparedClaims claims(ClaimStore store) {
        Node node = Node.builder("node-a").gpu(GpuDevice.builder("GPU-x").index(0).model("H100").memoryGiB(80).build()).build();
        return new PreparedClaims(Ledger.create(List.of(node)), store, new CdiSpecs(cdi), new PlacementEdits(Map.of("GPU-x", 0)));
    }

    @Test
    void theLedgerOfPreparedClaimsSavesBothOfTwoConcurrentPrepares() throws Exception {
        HoldFirstSave store = new HoldFirstSave(new DriverStateFile(state, "node-a"));
        PreparedClaims claims = claims(store);
        claims.restore();
        AtomicReference<Throwable> failed = new AtomicReference<>();
        Thread first = new Thread(() -> run(() -> claims.prepare(share("a", 30)), failed), "prepare-a");
        Thread second = new Thread(() -> run(() -> claims.prepare(share("b", 30)), failed), "prepare-b");
        first.start();
        assertTrue(store.firstIn.await(Kubelet.DEADLINE_SECONDS, TimeUnit.SECONDS));
        second.start();
        // the second runs until it waits for the lock, or (without the lock) to its end
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(Kubelet.DEADLINE_SECONDS);
        while (second.isAlive() && second.getState() != Thread.State.BLOCKED && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        store.release.countDown();
        first.join();
        second.join();
        assertEquals(null, failed.get());

        // restart on the same state file: both reservations are back, so a third 30 GiB share is refused
        PreparedClaims restarted = claims(new DriverStateFile(state, "node-a"));
        restarted.restore();
        assertEquals(List.of("a", "b"), restarted.all().stream().map(PreparedClaim::uid).sorted().toList());
        PreparedClaims.RefusedException e = assertThrows(PreparedClaims.RefusedException.class,
                () -> restarted.prepare(share("c", 30)));
        assertTrue(e.getMessage().startsWith("does not fit"), e.getMessage());
    }

    interface Step {
        void run() throws Exception;
    }

    static void run(Step s, AtomicReference<Throwable> failed) {
        try {
            s.run();
        } catch (Throwable t) {
            failed.compareAndSet(null, t);
        }
    }
}
