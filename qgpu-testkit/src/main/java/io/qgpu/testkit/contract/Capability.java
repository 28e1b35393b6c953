package io.qgpu.testkit.contract;

/**
 * Optional features of a scheduler under test. A rule that needs a capability the scheduler does
 * not declare is skipped (reported as aborted, with the reason), and the seeded property rules stop
 * generating what it would need. Everything else (memory, guaranteed compute, tenants per GPU,
 * exclusive claims, granularity, selectors, health, release, determinism) is always required.
 *
 * <pre>{@code
 * @Override
 * protected Set<Capability> capabilities() {
 *     return EnumSet.of(Capability.MULTI_GPU, Capability.PRIORITY_CLASSES);
 * }
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public enum Capability {
    /** Claims of several GPUs of one node, all or nothing (rules 2.x). */
    MULTI_GPU,
    /** Guaranteed compute admitted per priority class, and GPUs kept for a class (rules 4.x). */
    PRIORITY_CLASSES,
    /** Affinity, anti-affinity and exclusion labels (rules 5.x). */
    LOCALITY_LABELS,
    /** Multi-GPU claims get the best-linked GPU sets of a node (rules 6.x; needs {@link #MULTI_GPU}). */
    TOPOLOGY,
    /**
     * Nodes declare CPU and host memory, claims ask for them, host-only claims (0 GPUs) exist, and
     * neither is ever oversubscribed (rule 1.19; the seeded property rules then generate them).
     */
    HOST_RESOURCES
}
