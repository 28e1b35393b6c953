/**
 * The qgpu testkit, a test dependency for anyone writing a GPU scheduler: fake GPUs and machines,
 * seeded generators with shrinking, invariant checkers that judge any scheduler's output, and the
 * scheduler contract suite (JUnit 5).
 */
module io.qgpu.testkit {
    requires static transitive org.jspecify;
    requires transitive io.qgpu.api;
    requires transitive io.qgpu.core;
    // transitive: Inventory (io.qgpu.json) is in the contract suite's and the generators' signatures
    requires transitive io.qgpu.json;
    requires transitive org.junit.jupiter.api;
    requires com.fasterxml.jackson.databind;

    exports io.qgpu.testkit.machines;
    exports io.qgpu.testkit.property;
    exports io.qgpu.testkit.invariants;
    exports io.qgpu.testkit.contract;
    exports io.qgpu.testkit.sim;
    exports io.qgpu.testkit.sim.scenario;

    // Jackson binds the scenario file's records
    opens io.qgpu.testkit.sim.scenario to com.fasterxml.jackson.databind;

    // JUnit reflects over the inherited rule methods of the contract suite
    opens io.qgpu.testkit.contract to org.junit.platform.commons;
}
