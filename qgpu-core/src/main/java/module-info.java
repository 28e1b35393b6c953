/**
 * qgpu engines: the ledger, the placement engine, compute policy engines, the preemption state
 * machine, the token scheduler, the runtime gate, and JSON state.
 */
module io.qgpu.core {
    requires static transitive org.jspecify;
    requires transitive io.qgpu.api;
    requires org.slf4j;
    // transitive: the exported io.qgpu.core.json names Jackson types (JsonInput.root(), bind's TypeReference,
    // QgpuJson.mapper()), so a user of them must read Jackson too
    requires transitive com.fasterxml.jackson.databind;

    exports io.qgpu.core.ledger;
    exports io.qgpu.core.json;
    exports io.qgpu.core.placement;
    exports io.qgpu.core.compute;
    exports io.qgpu.core.preempt;
    exports io.qgpu.core.gate;
    exports io.qgpu.core.time;

    // Not exported: io.qgpu.core.internal (shared helpers) and io.qgpu.core.ledger.internal (the
    // ledger's parts behind the Ledger facade).

    opens io.qgpu.core.json to com.fasterxml.jackson.databind;
}
