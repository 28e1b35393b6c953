/**
 * The qgpu model: GPUs, nodes and their links, claims, placements and results, granularity rules,
 * and the SPIs that engines and adapters implement. No runtime dependency.
 */
module io.qgpu.api {
    requires static transitive org.jspecify;
    exports io.qgpu.api;
    exports io.qgpu.api.spi;
    exports io.qgpu.api.placement;
}
