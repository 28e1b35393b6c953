package io.qgpu.testkit.property;

import io.qgpu.api.Claim;
import io.qgpu.api.Validate;

/**
 * One step of an operation sequence driven against a scheduler: place a claim, or release a
 * tenant (which may be unknown or already released: release must be idempotent).
 *
 * <pre>{@code
 * List<Op> ops = List.of(new Op.Place(claim), new Op.Release(claim.tenantId()));
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public sealed interface Op {

    /** Place {@code claim}. */
    record Place(Claim claim) implements Op {
        public Place {
            Validate.notNull("op.place.claim", claim);
        }

        @Override
        public String toString() {
            return "place " + Describe.claim(claim);
        }
    }

    /** Release {@code tenantId}. */
    record Release(String tenantId) implements Op {
        public Release {
            Validate.notBlank("op.release.tenantId", tenantId);
        }

        @Override
        public String toString() {
            return "release " + tenantId;
        }
    }
}
