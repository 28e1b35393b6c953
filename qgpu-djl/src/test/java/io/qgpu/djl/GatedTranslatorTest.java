package io.qgpu.djl;

import static org.junit.jupiter.api.Assertions.*;

import ai.djl.Model;
import ai.djl.inference.Predictor;
import ai.djl.ndarray.NDList;
import ai.djl.translate.TranslateException;
import ai.djl.translate.Translator;
import ai.djl.translate.TranslatorContext;
import io.qgpu.core.gate.Gate;
import io.qgpu.core.gate.GateConfig;
import io.qgpu.core.gate.GateEvent;
import io.qgpu.core.gate.GateTenantSpec;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The translator-level hook and sessions, on the real model: the lease covers the forward pass and not the
 * pre-processing, a failing forward pass leaves no lease open, a session's predictions share its one lease,
 * and a predictor wrapped around a server's own predictor runs under the lease.
 */
@Timeout(60) // a hang guard only
class GatedTranslatorTest {

    @Test
    void theLeaseIsHeldDuringTheForwardPassAndNotDuringPreProcessing() throws Exception {
        VirtualGpu v = new VirtualGpu();
        Gate gate = v.gate(GateConfig.custom());
        QgpuDjl djl = QgpuDjl.create(gate, GateTenantSpec.online("chat").build());
        List<Integer> leasesInPreprocessing = new ArrayList<>();
        List<Integer> leasesInPostprocessing = new ArrayList<>();
        Translator<float[], float[]> probe = new Probe(new OrtFixture.RowTranslator(),
                () -> leasesInPreprocessing.add(gate.openLeases()), () -> leasesInPostprocessing.add(gate.openLeases()));
        try (Model model = OrtFixture.load();
             Predictor<float[], float[]> p = model.newPredictor(djl.translator(probe))) {
            float[] x = OrtFixture.row(3);
            assertArrayEquals(OrtFixture.MLP.forward(x), p.predict(x), 1e-5f);
            List<float[]> rows = List.of(OrtFixture.row(4), OrtFixture.row(5), OrtFixture.row(6));
            assertEquals(3, p.batchPredict(rows).size());
        } finally {
            gate.close();
        }
        assertEquals(List.of(0, 0), leasesInPreprocessing, "no lease while the input is prepared");
        assertEquals(List.of(1, 1), leasesInPostprocessing, "the lease is open while the output is read back");
        assertEquals(0, gate.openLeases());
    }

    @Test
    void aFailingForwardPassLeavesNoLeaseOpen() throws Exception {
        VirtualGpu v = new VirtualGpu();
        Gate gate = v.gate(GateConfig.custom());
        QgpuDjl djl = QgpuDjl.create(gate, GateTenantSpec.online("chat").build());
        try (Model model = OrtFixture.load();
             Predictor<float[], float[]> p = model.newPredictor(djl.translator(new OrtFixture.RowTranslator()))) {
            // a row of the wrong width: the engine refuses it after the lease was taken
            assertThrows(Exception.class, () -> p.predict(new float[5]));
            assertEquals(0, gate.openLeases(), "the context's close closed the lease");
            float[] x = OrtFixture.row(1);
            assertArrayEquals(OrtFixture.MLP.forward(x), p.predict(x), 1e-5f, "and the next prediction runs");
            assertEquals(0, gate.openLeases());
        } finally {
            gate.close();
        }
    }

    @Test
    void predictionsInASessionShareItsLeaseAndCheckpointIt() throws Exception {
        VirtualGpu v = new VirtualGpu();
        Gate gate = v.gate(GateConfig.custom());
        List<GateEvent> events = new CopyOnWriteArrayList<>();
        gate.addListener(events::add);
        QgpuDjl batch = QgpuDjl.create(gate, GateTenantSpec.offline("batch").build());
        AtomicInteger maxOpen = new AtomicInteger();
        try (Model model = OrtFixture.load();
             GatedPredictor<float[], float[]> p = batch.newPredictor(model,
                     new Stepped(new OrtFixture.RowTranslator(), () -> maxOpen.accumulateAndGet(gate.openLeases(), Math::max)))) {
            try (GateSession s = batch.openSession()) {
                assertFalse(s.isNested());
                for (int i = 0; i < 5; i++) {
                    p.batchPredict(List.of(OrtFixture.row(i), OrtFixture.row(i + 1)));
                }
                try (GateSession inner = batch.openSession()) {
                    assertTrue(inner.isNested());
                    assertSame(s.lease(), inner.lease());
                }
                assertFalse(s.lease().isClosed(), "a nested session's close leaves the outer lease open");
            }
            assertEquals(0, gate.openLeases());
        } finally {
            gate.close();
        }
        assertEquals(1, maxOpen.get(), "never a second lease");
        assertEquals(1, events.stream().filter(e -> e instanceof GateEvent.LeaseGranted).count(), "one acquire for the session");
    }

    @Test
    void aWrappedPredictorRunsUnderTheLeaseAndRefusesToStreamUngated() throws Exception {
        VirtualGpu v = new VirtualGpu();
        Gate gate = v.gate(GateConfig.custom());
        QgpuDjl djl = QgpuDjl.create(gate, GateTenantSpec.online("chat").build());
        List<Integer> open = new ArrayList<>();
        try (Model model = OrtFixture.load();
             GatedPredictor<float[], float[]> p = djl.wrap(model, model.newPredictor(
                     new Stepped(new OrtFixture.RowTranslator(), () -> open.add(gate.openLeases()))))) {
            float[] x = OrtFixture.row(2);
            assertArrayEquals(OrtFixture.MLP.forward(x), p.predict(x), 1e-5f);
            assertEquals(List.of(1), open);
            assertFalse(p.supportsStreaming());
            assertThrows(IllegalStateException.class, () -> p.streamingPredict(x));
            assertEquals(0, djl.usage().openLeases());
            assertTrue(djl.usage().totalLeaseNanos() >= 0);
        } finally {
            gate.close();
        }
    }

    @Test
    void anInterruptedWaitIsATranslateExceptionAndLeavesNothingBehind() throws Exception {
        VirtualGpu v = new VirtualGpu();
        Gate gate = v.gate(GateConfig.custom());
        QgpuDjl chat = QgpuDjl.create(gate, GateTenantSpec.online("chat").build());
        QgpuDjl batch = QgpuDjl.create(gate, GateTenantSpec.offline("batch").build());
        try (Model model = OrtFixture.load();
             GatedPredictor<float[], float[]> p = batch.newPredictor(model, new OrtFixture.RowTranslator())) {
            try (GateSession online = chat.openSession()) {
                Thread.currentThread().interrupt();   // the offline acquire waits for the online session, interrupted
                TranslateException e = assertThrows(TranslateException.class, () -> p.predict(OrtFixture.row(0)));
                assertInstanceOf(InterruptedException.class, e.getCause());
                assertTrue(Thread.interrupted(), "the flag is set again");
                assertEquals(0, gate.waitingAcquires());
            }
            assertEquals(0, gate.openLeases());
        } finally {
            gate.close();
        }
    }

    /** Runs hooks after pre-processing's delegate and before post-processing's delegate. */
    private static final class Probe implements Translator<float[], float[]> {
        private final Translator<float[], float[]> delegate;
        private final Runnable inPre;
        private final Runnable inPost;

        Probe(Translator<float[], float[]> delegate, Runnable inPre, Runnable inPost) {
            this.delegate = delegate;
            this.inPre = inPre;
            this.inPost = inPost;
        }

        @Override
        public NDList processInput(TranslatorContext ctx, float[] input) throws Exception {
            inPre.run();
            return delegate.processInput(ctx, input);
        }

        @Override
        public NDList batchProcessInput(TranslatorContext ctx, List<float[]> inputs) throws Exception {
            inPre.run();
            return delegate.batchProcessInput(ctx, inputs);
        }

        @Override
        public float[] processOutput(TranslatorContext ctx, NDList list) throws Exception {
            inPost.run();
            return delegate.processOutput(ctx, list);
        }

        @Override
        public List<float[]> batchProcessOutput(TranslatorContext ctx, NDList list) throws Exception {
            inPost.run();
            return delegate.batchProcessOutput(ctx, list);
        }

        @Override
        public ai.djl.translate.Batchifier getBatchifier() {
            return delegate.getBatchifier();
        }
    }
}
