/**
 * qgpu engines: the ledger, the placement engine, compute policy engines, the preemption state
 * machine, the token scheduler, the runtime gate, and the duration syntax. No JSON library: the file
 * formats are qgpu-json's ({@code io.qgpu.json}).
 */
module io.qgpu.core {
    requires static transitive org.jspecify;
    requires transitive io.qgpu.api;
    requires org.slf4j;

    exports io.qgpu.core.ledger;
    exports io.qgpu.core.placement;
    exports io.qgpu.core.compute;
    exports io.qgpu.core.preempt;
    exports io.qgpu.core.gate;
    exports io.qgpu.core.time;

    // Not exported: io.qgpu.core.internal (shared helpers) and io.qgpu.core.ledger.internal (the
    // ledger's parts behind the Ledger facade).
}
