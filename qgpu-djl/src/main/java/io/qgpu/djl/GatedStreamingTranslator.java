package io.qgpu.djl;

import ai.djl.inference.streaming.StreamingTranslator;
import ai.djl.ndarray.NDList;
import ai.djl.translate.TranslatorContext;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;
import org.jspecify.annotations.Nullable;

/**
 * {@link GatedTranslator} for a {@link StreamingTranslator} (streamed generation): each step of the stream runs
 * under a lease of the tenant, taken by the thread that consumes the stream when it asks for the first step,
 * with a checkpoint before every later step (so online work waits for at most one step of a generation), and
 * closed when the stream ends or is closed. The lease taken for the pre-processing of a streamed prediction
 * is closed before the stream is handed on: no GPU work has run yet.
 *
 * <pre>{@code
 * Translator<String, MyStream> gated = djl.translator(myStreamingTranslator);   // a GatedStreamingTranslator
 * try (Predictor<String, MyStream> p = model.newPredictor(gated)) {
 *     p.streamingPredict(prompt).getIterativeOutput();  // each step under the consuming thread's lease
 * }
 * }</pre>
 *
 * <p>Consume a stream on one thread: the lease belongs to the thread that took it. The time between two
 * steps (while the consumer handles a step) counts as the tenant's GPU time, since the lease stays open.
 *
 * <p>Thread safety: as thread-safe as the wrapped translator; each stream has its own lease.
 *
 * @param <I> the input type
 * @param <O> the output type
 */
public final class GatedStreamingTranslator<I, O> extends GatedTranslator<I, O> implements StreamingTranslator<I, O> {

    private final StreamingTranslator<I, O> streaming;

    GatedStreamingTranslator(StreamingTranslator<I, O> delegate, LeaseScope scope) {
        super(delegate, scope);
        this.streaming = delegate;
    }

    @Override
    public StreamOutput<O> processStreamOutput(TranslatorContext ctx, Stream<NDList> steps) throws Exception {
        leave(ctx);
        Steps gated = new Steps(steps.iterator(), scope());
        Stream<NDList> s = StreamSupport.stream(
                Spliterators.spliteratorUnknownSize(gated, Spliterator.NONNULL | Spliterator.ORDERED), false)
                .onClose(gated::close)
                .onClose(steps::close);
        return streaming.processStreamOutput(ctx, s);
    }

    @Override
    public Support getSupport() {
        return streaming.getSupport();
    }

    /**
     * The steps of one stream, each under the consuming thread's lease: the gate is asked (acquire, then a
     * checkpoint) before the wrapped iterator's {@code hasNext}, since a stream's iterator computes the next
     * step there (DJL's streaming blocks hand out their steps as a {@link Stream}). Not thread-safe (one
     * consumer).
     */
    static final class Steps implements Iterator<NDList>, AutoCloseable {
        private final Iterator<NDList> steps;
        private final LeaseScope scope;
        private @Nullable GateSession session;   // opened at the first step
        private boolean ready;
        private boolean done;

        Steps(Iterator<NDList> steps, LeaseScope scope) {
            this.steps = steps;
            this.scope = scope;
        }

        @Override
        public boolean hasNext() {
            if (done) {
                return false;
            }
            if (ready) {
                return true;
            }
            try {
                GateSession s = session;
                if (s == null) {
                    session = scope.enter();
                } else {
                    s.checkpoint();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                close();
                throw new GateInterruptedException(scope.tenant().name(), e);
            }
            if (!steps.hasNext()) {
                close();
                return false;
            }
            ready = true;
            return true;
        }

        @Override
        public NDList next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            ready = false;
            return steps.next();
        }

        @Override
        public void close() {
            done = true;
            GateSession s = session;
            if (s != null) {
                s.close();
            }
        }
    }
}
