package io.qgpu.djl;

import ai.djl.ndarray.NDList;
import ai.djl.translate.Batchifier;
import ai.djl.translate.TranslateException;
import ai.djl.translate.Translator;
import ai.djl.translate.TranslatorContext;
import ai.djl.translate.TranslatorOptions;
import java.util.List;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * The gate at the {@link Translator} level, for servers that own their loop (their own batching, their own
 * predictor pool): it wraps the server's translator, and every prediction that runs through it takes a lease
 * of the {@link QgpuDjl}'s tenant after pre-processing and closes it after post-processing, so that the lease
 * covers the forward pass (and the reading back of its result) and not the CPU work before it. A prediction
 * on a thread with an open {@link GateSession} checkpoints that session's lease instead.
 *
 * <pre>{@code
 * Translator<float[], float[]> gated = djl.translator(myTranslator);
 * try (Predictor<float[], float[]> p = model.newPredictor(gated)) {   // the server's own predictor
 *     p.batchPredict(batch);                                          // forward pass under a lease
 * }
 * }</pre>
 *
 * <p>The lease is attached to the prediction's context as well: if the forward pass fails, closing the
 * context (DJL's predictor does) closes the lease. A streaming translator is wrapped by
 * {@link GatedStreamingTranslator}, which gates each step of the stream.
 *
 * <p>Thread safety: as thread-safe as the wrapped translator; each prediction's lease lives in its own context.
 *
 * @param <I> the input type
 * @param <O> the output type
 */
public class GatedTranslator<I, O> implements Translator<I, O> {

    /** The context attachment that holds the prediction's session. */
    static final String SESSION = "io.qgpu.djl.session";

    private final Translator<I, O> delegate;
    private final LeaseScope scope;

    GatedTranslator(Translator<I, O> delegate, LeaseScope scope) {
        this.delegate = delegate;
        this.scope = scope;
    }

    /** The translator this one wraps. */
    public Translator<I, O> delegate() {
        return delegate;
    }

    LeaseScope scope() {
        return scope;
    }

    /** The wrapped translator's; null when it batches nothing (DJL's {@code NoBatchifyTranslator}). */
    @Override
    public @Nullable Batchifier getBatchifier() {
        return delegate.getBatchifier();
    }

    @Override
    public void prepare(TranslatorContext ctx) throws Exception {
        delegate.prepare(ctx);
    }

    /** The wrapped translator's; null when it has none (DJL's default). */
    @Override
    public @Nullable TranslatorOptions getExpansions() {
        return delegate.getExpansions();
    }

    @Override
    public NDList processInput(TranslatorContext ctx, I input) throws Exception {
        NDList list = delegate.processInput(ctx, input);
        enter(ctx);
        return list;
    }

    @Override
    public O processOutput(TranslatorContext ctx, NDList list) throws Exception {
        try {
            return delegate.processOutput(ctx, list);
        } finally {
            leave(ctx);
        }
    }

    @Override
    public NDList batchProcessInput(TranslatorContext ctx, List<I> inputs) throws Exception {
        NDList list = delegate.batchProcessInput(ctx, inputs);
        enter(ctx);
        return list;
    }

    @Override
    public List<O> batchProcessOutput(TranslatorContext ctx, NDList list) throws Exception {
        try {
            return delegate.batchProcessOutput(ctx, list);
        } finally {
            leave(ctx);
        }
    }

    /** Opens the prediction's session unless its context has one; the context's manager closes it at the latest. */
    final void enter(TranslatorContext ctx) throws TranslateException {
        if (ctx.getAttachment(SESSION) instanceof GateSession open && !open.isClosed()) {
            return;
        }
        GateSession s;
        try {
            s = scope.enter();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TranslateException("interrupted while waiting at the gate for tenant " + scope.tenant().name(), e);
        }
        ctx.setAttachment(SESSION, s);
        ctx.getNDManager().attachInternal("qgpu-session-" + UUID.randomUUID(), s);
    }

    /** Closes the prediction's session, if it has one. */
    final void leave(TranslatorContext ctx) {
        Object s = ctx.getAttachment(SESSION);
        if (s instanceof GateSession session) {
            session.close();
        }
    }
}
