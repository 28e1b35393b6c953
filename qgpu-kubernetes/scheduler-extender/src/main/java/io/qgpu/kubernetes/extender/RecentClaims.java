package io.qgpu.kubernetes.extender;

import io.fabric8.kubernetes.api.model.Pod;
import io.qgpu.api.Claim;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The claims of the last pods, by the pod object: working out a pod's claim reads every resource
 * quantity of every container through fabric8's {@code Quantity} (big decimals), and {@code filter},
 * {@code prioritize} and, in the demo mode, {@code bind} ask it of the same pod object
 * ({@link RecentPods} hands prioritize the pod filter read; the demo cluster hands bind the pod it
 * remembered). A claim found here is the one {@link PodClaims#claimOf} gave for that very object.
 *
 * <p>Direct-mapped: {@value #SLOTS} slots by the object's identity hash, the newer pod replacing the
 * older in its slot (enough for a bind to find its pod's claim with 64 binds in flight behind the
 * scheduling cycle). A pod whose claim could not be made (a 400) is not filed: it is refused with the
 * same message every time.
 *
 * <pre>{@code
 * RecentClaims claims = new RecentClaims(new PodClaims(rules));
 * claims.claimOf(pod);   // PodClaims' answer; the second time for the same object, without working it out
 * }</pre>
 *
 * <p>Thread safety: thread-safe (each slot holds an immutable entry, replaced atomically). The pods
 * are not changed after they are read (the demo cluster records a bind on a copy).
 */
final class RecentClaims {
    static final int SLOTS = 1024;

    private record Entry(Pod pod, Optional<Claim> claim) {
    }

    private final PodClaims claims;
    private final AtomicReferenceArray<Entry> slots = new AtomicReferenceArray<>(SLOTS);

    RecentClaims(PodClaims claims) {
        this.claims = claims;
    }

    /** {@link PodClaims#claimOf}{@code (pod)}. */
    Optional<Claim> claimOf(Pod pod) {
        int slot = System.identityHashCode(pod) & (SLOTS - 1);
        Entry e = slots.get(slot);
        if (e != null && e.pod == pod) {
            return e.claim;
        }
        Optional<Claim> claim = claims.claimOf(pod);
        slots.set(slot, new Entry(pod, claim));
        return claim;
    }
}
