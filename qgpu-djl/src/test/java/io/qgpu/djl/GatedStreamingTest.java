package io.qgpu.djl;

import static org.junit.jupiter.api.Assertions.*;

import ai.djl.Model;
import ai.djl.inference.Predictor;
import ai.djl.inference.streaming.StreamingTranslator;
import ai.djl.ndarray.NDList;
import ai.djl.translate.TranslatorContext;
import io.qgpu.core.gate.Gate;
import io.qgpu.core.gate.GateConfig;
import io.qgpu.core.gate.GateTenantSpec;
import java.time.Duration;
import java.util.Iterator;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Streamed generation under the gate: each step runs under the consuming thread's lease, an online request
 * that comes during a step waits for that step only (the checkpoint before the next step parks the stream),
 * and the lease is closed when the stream ends. The steps are a stand-in for a generating block (ONNX
 * Runtime's block does not stream): each step is one call to the stream's iterator, as DJL's streaming blocks
 * produce them: a stream over an iterator (whose {@code hasNext} computes the step, as a stream's iterator
 * does).
 *
 * <p>Seeded bug, checked by hand: with the checkpoint in {@code GatedStreamingTranslator.Steps.hasNext} removed,
 * the next step starts while the online request waits, and the test fails.
 */
@Timeout(60) // a hang guard only
class GatedStreamingTest {

    private static final long MS = 1_000_000L;

    @Test
    void eachStepRunsUnderTheLeaseAndOnlineWaitsForOneStepOnly() throws Exception {
        VirtualGpu v = new VirtualGpu();
        Gate gate = v.gate(GateConfig.custom().preemptionBound(Duration.ofSeconds(1)).releaseDelay(Duration.ofMillis(100)));
        QgpuDjl chat = QgpuDjl.create(gate, GateTenantSpec.online("chat").build());
        QgpuDjl gen = QgpuDjl.create(gate, GateTenantSpec.offline("generate").build());
        BlockingQueue<Integer> stepStarts = new LinkedBlockingQueue<>();
        Semaphore go = new Semaphore(0);
        int[] openDuringStep = new int[4];
        Iterator<NDList> steps = new Iterator<>() {
            int k;

            @Override
            public boolean hasNext() {
                return k < 4;
            }

            @Override
            public NDList next() {
                openDuringStep[k] = gate.usage(gen.tenant()).runningLeases();
                stepStarts.add(k++);
                go.acquireUninterruptibly();
                return new NDList();
            }
        };
        GatedTranslator<float[], Iterator<NDList>> gated = gen.translator(new Generator());
        assertInstanceOf(GatedStreamingTranslator.class, gated);
        GatedStreamingTranslator<float[], Iterator<NDList>> streaming = (GatedStreamingTranslator<float[], Iterator<NDList>>) gated;
        try (Model model = OrtFixture.load();
             TranslatorContext ctx = new Predictor.PredictorContext(model, model.getNDManager(), null)) {
            streaming.processInput(ctx, OrtFixture.row(0));
            assertEquals(1, gate.openLeases(), "pre-processing ran under a lease");
            StreamingTranslator.StreamOutput<Iterator<NDList>> out = streaming.processStreamOutput(ctx,
                    StreamSupport.stream(Spliterators.spliteratorUnknownSize(steps, Spliterator.NONNULL), false));
            assertEquals(0, gate.openLeases(), "closed before the stream is handed on");
            Iterator<NDList> consumer = out.getIterativeOutput();
            CompletableFuture<Integer> consumed = CompletableFuture.supplyAsync(() -> {
                int n = 0;
                while (consumer.hasNext()) {
                    consumer.next();
                    n++;
                }
                return n;
            }, VirtualGpu.THREADS);
            assertEquals(0, stepStarts.poll(10, TimeUnit.SECONDS));
            go.release();
            assertEquals(1, stepStarts.poll(10, TimeUnit.SECONDS));
            v.now.addAndGet(2 * MS);
            CompletableFuture<GateSession> online = CompletableFuture.supplyAsync(() -> {
                try {
                    return chat.openSession();
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            }, VirtualGpu.THREADS);
            GatePromisesOnTheModelTest.await(() -> gate.waitingAcquires() == 1);
            go.release();                                   // step 1 ends; the checkpoint before step 2 parks
            GatePromisesOnTheModelTest.await(() -> online.isDone() || !stepStarts.isEmpty());
            assertTrue(online.isDone(), "online got the GPU before the next step");
            assertTrue(stepStarts.isEmpty());
            online.get().close();
            v.now.addAndGet(100 * MS);
            v.timer.runDue();                               // the release delay passes
            assertEquals(2, stepStarts.poll(10, TimeUnit.SECONDS));
            go.release();
            assertEquals(3, stepStarts.poll(10, TimeUnit.SECONDS));
            go.release();
            assertEquals(4, consumed.get(10, TimeUnit.SECONDS));
            assertArrayEquals(new int[] {1, 1, 1, 1}, openDuringStep, "every step under the lease");
            assertEquals(0, gate.openLeases(), "closed when the stream ended");
        } finally {
            gate.close();
        }
    }

    /** A streaming translator whose output is the stream's steps, for the consumer to pull. */
    private static final class Generator implements StreamingTranslator<float[], Iterator<NDList>> {
        @Override
        public NDList processInput(TranslatorContext ctx, float[] input) {
            return new NDList(ctx.getNDManager().create(input));
        }

        @Override
        public Iterator<NDList> processOutput(TranslatorContext ctx, NDList list) {
            throw new UnsupportedOperationException("streams only");
        }

        @Override
        public StreamOutput<Iterator<NDList>> processStreamOutput(TranslatorContext ctx, Stream<NDList> list) {
            return new StreamOutput<>() {
                @Override
                protected Iterator<NDList> buildAsyncOutput() {
                    throw new UnsupportedOperationException();
                }

                @Override
                protected void computeAsyncOutputInternal(Iterator<NDList> output) {
                    throw new UnsupportedOperationException();
                }

                @Override
                public Iterator<NDList> getIterativeOutputInternal() {
                    return list.iterator();
                }
            };
        }

        @Override
        public Support getSupport() {
            return Support.ITERATIVE;
        }
    }
}
