/**
 * The ledger: the one record of what is reserved on every GPU and node, which the placement engine,
 * the scheduler extender, the device plugin and the CLI commit to and read from. Start at
 * {@link io.qgpu.core.ledger.Ledger}; {@link io.qgpu.core.ledger.AdmissionRules} exposes its admission
 * rules as read-only checks; results are {@link io.qgpu.core.ledger.ReserveResult},
 * {@link io.qgpu.core.ledger.BatchResult} and {@link io.qgpu.core.ledger.ReconcileReport};
 * {@link io.qgpu.core.ledger.LedgerSnapshot} is its whole state as one value.
 *
 * <pre>{@code
 * Ledger ledger = Ledger.create(GranularityRules.ofDefaults(), List.of(node));
 * if (ledger.reserve(placement) instanceof ReserveResult.Refused f) {
 *     log.info("refused: {}", f.summary());
 * }
 * ledger.release("job-1");                   // idempotent
 * }</pre>
 *
 * <p><b>Guarantees.</b> The ledger never oversubscribes a GPU's memory, guaranteed compute (per
 * priority class) or tenant count, nor the CPU and host memory a node declares; a reservation is all
 * or nothing, and {@link io.qgpu.core.ledger.Ledger#commit} applies a batch of releases and
 * reservations all or nothing. A capacity problem is a refusal with reasons, never an exception; a
 * snapshot or structural change that would leave the ledger inconsistent throws
 * {@link io.qgpu.core.ledger.LedgerStateException} and changes nothing; a null argument or an unknown
 * GPU throws {@link io.qgpu.api.InvalidValueException}. {@code Ledger} is thread-safe (what is
 * linearizable, and how that is checked, is in its Javadoc); the results and the snapshot are immutable.
 *
 * <p>docs/ledger.md in the repository.
 */
@NullMarked
package io.qgpu.core.ledger;

import org.jspecify.annotations.NullMarked;
