/** Fake GPUs and machines, a GPU simulator, seeded generators with shrinking, invariant checkers, a contract suite. */
module io.qgpu.testkit {
    requires transitive io.qgpu.api;
    requires transitive io.qgpu.core;
    requires org.junit.jupiter.api;

    exports io.qgpu.testkit.sim;
}
