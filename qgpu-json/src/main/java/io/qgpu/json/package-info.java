/**
 * qgpu's file formats: strict JSON for inventories ({@link io.qgpu.json.Inventory}), nodes, claims,
 * placements and ledger snapshots ({@link io.qgpu.json.QgpuJson}), one input read with the
 * positions of its keys so that errors point at the user's text ({@link io.qgpu.json.JsonInput},
 * for formats of one's own). The CLI, the scheduler extender, the node agents and the testkit read and
 * write through it. This module (qgpu-json) holds qgpu's use of Jackson, which is part of its API;
 * qgpu-core, whose types it reads and writes, has no JSON library.
 *
 * <pre>{@code
 * Inventory inv = QgpuJson.readInventory(Path.of("inventory.json"));
 * Ledger ledger = inv.ledger();                       // every listed holding reserved
 * String json = QgpuJson.writeSnapshot(ledger.snapshot());
 * ledger.restore(QgpuJson.readSnapshot(json));
 * }</pre>
 *
 * <p><b>Guarantees.</b> Reading is strict: unknown or duplicate keys, fractions or strings where whole
 * numbers are meant, missing required keys and trailing content are refused with a
 * {@link io.qgpu.json.QgpuJsonException} that names the source, the JSON path and key as written,
 * the value, the rule, and the line and column where the parser knows them. Snapshots carry
 * {@code "schemaVersion": 1} and any other version is refused.
 *
 * <p>Thread safety: {@code QgpuJson} is stateless, {@code JsonInput} is immutable after construction,
 * {@code Inventory} is an immutable record and {@code QgpuJsonException} is immutable: all are safe from
 * any thread.
 *
 * <p>docs/formats.md in the repository, key by key, with JSON Schemas in schemas/.
 */
@NullMarked
package io.qgpu.json;

import org.jspecify.annotations.NullMarked;
