/**
 * The runtime gate around DJL: {@link io.qgpu.djl.GatedPredictor} runs each prediction under a lease of
 * the tenant the device plugin or DRA driver described in the environment ({@link io.qgpu.djl.QgpuEnvironment}),
 * {@link io.qgpu.djl.GatedTranslator} does the same inside a server's own loop, and
 * {@link io.qgpu.djl.OnnxRuntimeOptions} maps the memory limit onto ONNX Runtime's CUDA provider. Start at
 * {@link io.qgpu.djl.QgpuDjl}.
 */
module io.qgpu.djl {
    // nullness annotations on the exported API; nothing needs them at run time
    requires static transitive org.jspecify;
    requires transitive io.qgpu.core;
    // GatedPredictor and GatedTranslator are DJL types: a user's code must read DJL's module too
    requires transitive ai.djl.api;
    // only OnnxRuntimeOptions needs it (its methods return and throw ONNX Runtime's types, so a user who calls
    // them must read the module: transitive); servers on other engines run without it (static)
    requires static transitive com.microsoft.onnxruntime;
    requires org.slf4j;

    exports io.qgpu.djl;
    exports io.qgpu.djl.testing;
}
