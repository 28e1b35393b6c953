/**
 * Test helpers for servers that use qgpu-djl: {@link io.qgpu.djl.testing.OnnxMlp} writes a small real ONNX
 * model (a multi-layer perceptron with seeded weights) and computes what an engine must answer for it, so a
 * server's gate wiring can be tested on a real engine without a GPU or a download.
 *
 * <p><b>Guarantees.</b> The same builder settings and seed give the same model file, byte for byte; an
 * {@code OnnxMlp} is immutable. A bad setting throws {@link io.qgpu.api.InvalidValueException} naming the
 * field. Nothing here takes or returns null unless it is annotated {@code @Nullable}.
 */
@NullMarked
package io.qgpu.djl.testing;

import org.jspecify.annotations.NullMarked;
