/**
 * The runtime gate around DJL predictors: {@link io.qgpu.djl.QgpuDjl} is a tenant of a GPU's gate, built from
 * the environment the device plugin or DRA driver set ({@link io.qgpu.djl.QgpuEnvironment}) or from a gate and
 * a tenant spec; {@link io.qgpu.djl.GatedPredictor} runs each prediction under a lease of that tenant,
 * {@link io.qgpu.djl.GatedTranslator} and {@link io.qgpu.djl.GatedStreamingTranslator} do the same inside a
 * server's own loop, {@link io.qgpu.djl.GateSession} holds one lease over many batches with a checkpoint
 * between them, and {@link io.qgpu.djl.OnnxRuntimeOptions} maps the memory limit onto ONNX Runtime's CUDA
 * provider.
 *
 * <pre>{@code
 * QgpuDjl djl = QgpuDjl.fromEnvironment();                                  // once per process
 * Predictor<float[], float[]> predictor = djl.newPredictor(model, translator);
 * float[] y = predictor.predict(x);                                        // under the tenant's lease
 * }</pre>
 *
 * <p><b>Guarantees.</b> A thread holds at most one open lease of a {@code QgpuDjl}'s tenant: a prediction
 * entered while the thread holds one checkpoints it instead of acquiring another. Thread safety is stated per
 * class (predictors, like DJL's, are for one thread at a time). A bad environment variable or argument throws
 * {@link io.qgpu.api.InvalidValueException} naming the variable or the field. Nothing here takes or returns
 * null unless it is annotated {@code @Nullable}.
 *
 * <p>docs/djl.md in the repository.
 */
@NullMarked
package io.qgpu.djl;

import org.jspecify.annotations.NullMarked;
