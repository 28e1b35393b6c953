package io.qgpu.kubernetes.dra;

import java.util.List;
import java.util.Optional;

/**
 * Where the prepared claims are kept across restarts ({@link DriverStateFile}).
 *
 * <p>Thread safety: implementations need not be thread-safe; {@link PreparedClaims} calls them under its lock.
 */
interface ClaimStore {
    /** Replaces the kept claims; returns only once they are durable. */
    void save(List<PreparedClaim> claims);

    /** The kept claims; empty when none were ever saved. */
    Optional<List<PreparedClaim>> load();
}
