package io.qgpu.djl;

import ai.djl.ndarray.NDList;
import ai.djl.translate.Batchifier;
import ai.djl.translate.Translator;
import ai.djl.translate.TranslatorContext;
import java.util.List;

/** A translator that runs {@code beforeForward} after pre-processing each batch (inside the lease), for tests to step through. */
final class Stepped implements Translator<float[], float[]> {
    private final Translator<float[], float[]> delegate;
    private final Runnable beforeForward;

    Stepped(Translator<float[], float[]> delegate, Runnable beforeForward) {
        this.delegate = delegate;
        this.beforeForward = beforeForward;
    }

    @Override
    public NDList processInput(TranslatorContext ctx, float[] input) throws Exception {
        NDList l = delegate.processInput(ctx, input);
        beforeForward.run();
        return l;
    }

    @Override
    public NDList batchProcessInput(TranslatorContext ctx, List<float[]> inputs) throws Exception {
        NDList l = delegate.batchProcessInput(ctx, inputs);
        beforeForward.run();
        return l;
    }

    @Override
    public float[] processOutput(TranslatorContext ctx, NDList list) throws Exception {
        return delegate.processOutput(ctx, list);
    }

    @Override
    public List<float[]> batchProcessOutput(TranslatorContext ctx, NDList list) throws Exception {
        return delegate.batchProcessOutput(ctx, list);
    }

    @Override
    public Batchifier getBatchifier() {
        return delegate.getBatchifier();
    }
}
