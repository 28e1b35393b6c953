package io.qgpu.djl;

import static org.junit.jupiter.api.Assertions.*;

import ai.djl.Model;
import io.qgpu.core.gate.Gate;
import io.qgpu.core.gate.GateConfig;
import io.qgpu.core.gate.GateEvent;
import io.qgpu.core.gate.GateTenantSpec;
import io.qgpu.core.gate.Lease;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * One {@link QgpuDjl} shared by four threads at once, each with its own session and predictor on the real
 * model: every thread's predictions run under its own session's lease (never another thread's, never a second
 * one), the four sessions take four leases, and none is left open. Seeded bug, checked by hand: with
 * {@code LeaseScope} keeping one session for all threads (an {@code AtomicReference} instead of the
 * thread-local), the threads' sessions nest in one another's leases and the test fails (72 foreign nestings in
 * the run by hand).
 */
@Timeout(60) // a hang guard only
class SessionContentionTest {

    @Test
    void eachThreadsPredictionsRunUnderItsOwnSessionsLease() throws Exception {
        VirtualGpu v = new VirtualGpu();
        Gate gate = v.gate(GateConfig.custom());
        List<GateEvent> events = new CopyOnWriteArrayList<>();
        gate.addListener(events::add);
        QgpuDjl batch = QgpuDjl.create(gate, GateTenantSpec.offline("batch").build());
        int threads = 4;
        int rounds = 25;
        CyclicBarrier start = new CyclicBarrier(threads);
        Set<Lease> leases = ConcurrentHashMap.newKeySet();
        AtomicInteger foreign = new AtomicInteger();
        try (Model model = OrtFixture.load()) {
            List<Future<Integer>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                done.add(VirtualGpu.THREADS.submit(() -> {
                    int n = 0;
                    try (GatedPredictor<float[], float[]> p = batch.newPredictor(model, new OrtFixture.RowTranslator())) {
                        start.await(10, TimeUnit.SECONDS);
                        try (GateSession s = batch.openSession()) {
                            leases.add(s.lease());
                            for (int i = 0; i < rounds; i++) {
                                try (GateSession inner = batch.openSession()) {
                                    if (!inner.isNested() || inner.lease() != s.lease()) {
                                        foreign.incrementAndGet();
                                    }
                                }
                                float[] x = OrtFixture.row(i);
                                assertArrayEquals(OrtFixture.MLP.forward(x), p.predict(x), 1e-5f);
                                n++;
                            }
                        }
                    }
                    return n;
                }));
            }
            for (Future<Integer> f : done) {
                assertEquals(rounds, f.get(30, TimeUnit.SECONDS));
            }
        } finally {
            gate.close();
        }
        assertEquals(0, foreign.get(), "a thread's nested session is its own session's lease");
        assertEquals(threads, leases.size(), "one lease per thread's session");
        assertEquals(threads, events.stream().filter(e -> e instanceof GateEvent.LeaseGranted).count(),
                "the predictions took no lease of their own");
        assertEquals(0, gate.openLeases());
    }
}
