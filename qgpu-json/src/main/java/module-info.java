/**
 * qgpu's file formats: strict, versioned JSON for inventories, nodes, claims, placements and ledger
 * snapshots, read with the positions of their keys so that errors name the file, the JSON path and the
 * value. Built on Jackson, which is part of this module's API; qgpu-core, whose types it reads and
 * writes, has no JSON library.
 */
module io.qgpu.json {
    requires static transitive org.jspecify;
    requires transitive io.qgpu.api;
    requires transitive io.qgpu.core;
    // transitive: the exported io.qgpu.json names Jackson types (JsonInput.root(), bind's TypeReference,
    // QgpuJson.mapper()), so a user of them must read Jackson too
    requires transitive com.fasterxml.jackson.databind;

    exports io.qgpu.json;

    // Jackson maps the package's wire records (Dto, HostDto)
    opens io.qgpu.json to com.fasterxml.jackson.databind;
}
