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
    Optional<Saved> load();

    /**
     * What was kept.
     *
     * @param claims        the claims
     * @param anotherBoot   when they were saved before the node last booted: the saved and the current boot ids,
     *                      in words; their containers are gone and their CDI specs with them
     */
    record Saved(List<PreparedClaim> claims, Optional<String> anotherBoot) {
        public Saved {
            claims = List.copyOf(claims);
        }

        /** Claims saved in this boot. */
        static Saved of(List<PreparedClaim> claims) {
            return new Saved(claims, Optional.empty());
        }
    }
}
