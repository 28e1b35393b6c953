package io.qgpu.djl;

import ai.djl.Model;
import ai.djl.inference.Predictor;
import ai.djl.inference.streaming.StreamingTranslator.StreamOutput;
import ai.djl.metric.Dimension;
import ai.djl.metric.Metrics;
import ai.djl.metric.Unit;
import ai.djl.translate.TranslateException;
import io.qgpu.api.InvalidValueException;
import io.qgpu.core.gate.TenantUsage;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * A DJL {@link Predictor} that runs every prediction of the predictor it wraps under a lease of a
 * {@link QgpuDjl}'s tenant: {@link #predict} and {@link #batchPredict} acquire a lease (or checkpoint the
 * thread's open {@link GateSession}), run, and close it. A batch longer than the slice size
 * ({@link #setSliceSize}) runs as slices of at most that many inputs under one lease, with a
 * {@link GateSession#checkpoint()} between slices, so online work waits for at most one slice of it.
 *
 * <pre>{@code
 * QgpuDjl djl = QgpuDjl.fromEnvironment();                       // QGPU_PRIORITY, QGPU_COMPUTE_LIMIT, ...
 * try (Predictor<float[], float[]> predictor = djl.newPredictor(model, translator)) {
 *     float[] y = predictor.predict(x);                            // under a lease of the pod's tenant
 * }
 * }</pre>
 *
 * <p>The lease covers the wrapped predictor's whole call: pre-processing, the forward pass and
 * post-processing (which, for engines that compute lazily, is where the device finishes). A server that
 * wants the lease around the forward pass alone wraps its translator instead ({@link QgpuDjl#translator}).
 * {@link #streamingPredict} is offered only by a predictor from {@link QgpuDjl#newPredictor} with a streaming
 * translator, which it gates step by step: each step of the stream runs under the consuming thread's lease,
 * with a checkpoint between steps; a wrapped predictor ({@link QgpuDjl#wrap}) refuses to stream.
 *
 * <p>Reporting: with {@link #setMetrics} set, every call adds {@code QgpuGateWait} (time waited at the gate)
 * and {@code QgpuLease} (time under the lease) in microseconds, next to DJL's own metrics (which the wrapped
 * predictor adds to the same {@link Metrics}); {@link #usage()} is the tenant's use of the GPU as the gate
 * counts it.
 *
 * <p>Thread safety: as DJL's predictors, one thread at a time (make one per thread); the gate and the
 * tenant are shared safely.
 *
 * @param <I> the input type
 * @param <O> the output type
 */
public final class GatedPredictor<I, O> extends Predictor<I, O> {

    private final Predictor<I, O> delegate;
    private final LeaseScope scope;
    private final Dimension gateDimension;
    private final boolean gatedStreaming;
    private int sliceSize = Integer.MAX_VALUE;

    GatedPredictor(Model model, Predictor<I, O> delegate, LeaseScope scope, boolean gatedStreaming) {
        // the superclass is given a sub-manager of the model's manager (closed with this predictor); all
        // predictions go to the delegate
        super(model, null, model.getNDManager().getDevice(), false);
        this.delegate = delegate;
        this.scope = scope;
        this.gateDimension = new Dimension("Tenant", scope.tenant().name());
        this.gatedStreaming = gatedStreaming;
    }

    /** The predictor this one wraps. */
    public Predictor<I, O> delegate() {
        return delegate;
    }

    /** The tenant's use of the GPU now, as its gate counts it. */
    public TenantUsage usage() {
        return scope.gate().usage(scope.tenant());
    }

    /** The most inputs {@link #batchPredict} runs between two checkpoints (unbounded by default). */
    public int sliceSize() {
        return sliceSize;
    }

    /**
     * Sets how many inputs {@link #batchPredict} runs between two checkpoints.
     *
     * @throws InvalidValueException if {@code n} is not positive
     */
    public void setSliceSize(int n) {
        if (n < 1) {
            throw new InvalidValueException("gatedPredictor.sliceSize", n, "must be at least 1");
        }
        this.sliceSize = n;
    }

    /**
     * Predicts one input under a lease.
     *
     * @throws TranslateException if the wrapped predictor fails, or the thread is interrupted while waiting at
     *                            the gate (its cause is then an {@link InterruptedException}, and the interrupt
     *                            flag is set again)
     */
    @Override
    public O predict(I input) throws TranslateException {
        try (GateSession s = enter()) {
            long t0 = now();
            try {
                return delegate.predict(input);
            } finally {
                report(s, t0);
            }
        }
    }

    /**
     * Predicts the inputs under one lease, as slices of at most {@link #sliceSize()} inputs with a checkpoint
     * between slices; the outputs are in input order.
     *
     * @throws TranslateException as {@link #predict}; also when interrupted at a checkpoint between slices
     */
    @Override
    public List<O> batchPredict(List<I> inputs) throws TranslateException {
        try (GateSession s = enter()) {
            long t0 = now();
            try {
                if (inputs.size() <= sliceSize) {
                    return delegate.batchPredict(inputs);
                }
                List<O> out = new ArrayList<>(inputs.size());
                for (int from = 0; from < inputs.size(); from += sliceSize) {
                    if (from > 0) {
                        checkpoint(s);
                    }
                    out.addAll(delegate.batchPredict(inputs.subList(from, Math.min(inputs.size(), from + sliceSize))));
                }
                return out;
            } finally {
                report(s, t0);
            }
        }
    }

    /**
     * The wrapped predictor's stream, each step under the gate (see the class comment); refused where the
     * steps would not be gated, so that ungated work does not pass for gated.
     *
     * @throws IllegalStateException if this predictor was not made by {@link QgpuDjl#newPredictor} with a
     *                               streaming translator, or the model's block does not stream
     */
    @Override
    public StreamOutput<O> streamingPredict(I input) throws TranslateException {
        if (!gatedStreaming) {
            throw new IllegalStateException("the wrapped predictor's translator is not gated: build the predictor with "
                    + "QgpuDjl.newPredictor, or wrap its translator with QgpuDjl.translator, to stream under the gate");
        }
        return delegate.streamingPredict(input);
    }

    @Override
    public boolean supportsStreaming() {
        return gatedStreaming && delegate.supportsStreaming();
    }

    /** Sets the metrics on this predictor and on the wrapped one; null (DJL's default) records none. */
    @Override
    public void setMetrics(@Nullable Metrics metrics) {
        super.setMetrics(metrics);
        delegate.setMetrics(metrics);
    }

    /** Closes the wrapped predictor and this one. */
    @Override
    public void close() {
        try {
            delegate.close();
        } finally {
            super.close();
        }
    }

    private GateSession enter() throws TranslateException {
        try {
            return scope.enter();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TranslateException("interrupted while waiting at the gate for tenant " + scope.tenant().name(), e);
        }
    }

    private void checkpoint(GateSession s) throws TranslateException {
        try {
            s.checkpoint();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TranslateException("interrupted at a checkpoint of tenant " + scope.tenant().name(), e);
        }
    }

    private long now() {
        return scope.gate().config().ticker().read();
    }

    private void report(GateSession s, long t0) {
        Metrics m = metrics;
        if (m != null) {
            m.addMetric("QgpuGateWait", s.waitedNanos() / 1000, Unit.MICROSECONDS, gateDimension);
            m.addMetric("QgpuLease", (now() - t0) / 1000, Unit.MICROSECONDS, gateDimension);
        }
    }
}
