package io.qgpu.api;

/** Why a node or GPU could not take a claim, or why the ledger refused a reservation. */
public enum ReasonCode {
    /** Not enough free device memory (requested and available in bytes). */
    INSUFFICIENT_MEMORY,
    /** Not enough guaranteed compute left in the claim's priority class (percent). */
    INSUFFICIENT_COMPUTE,
    /** The GPU already holds as many tenants as the granularity rules allow. */
    TOO_MANY_TENANTS,
    /**
     * The device is a MIG instance that already holds a tenant: a MIG instance is a whole device of its own,
     * and only the granularity rule {@code shareMigInstances} lets tenants share one.
     */
    MIG_INSTANCE_IN_USE,
    /** The GPU is unhealthy. */
    UNHEALTHY,
    /** An exclusive claim needs an empty GPU, or the GPU is held exclusively. */
    EXCLUSIVE,
    /** The GPU is kept for the other priority class. */
    RESERVED_FOR_OTHER_CLASS,
    /** A GPU model selector excludes it. */
    MODEL_NOT_SELECTED,
    /** A GPU UUID selector excludes it. */
    UUID_NOT_SELECTED,
    /** The node's labels do not match the node selector. */
    NODE_LABELS_MISMATCH,
    /** The GPU holds a tenant with the same anti-affinity label. */
    ANTI_AFFINITY,
    /** The GPU holds tenants of another (or no) exclusion label. */
    EXCLUSION,
    /** Tenants with this affinity label are on other GPUs. */
    AFFINITY,
    /** The node has fewer usable GPUs than the claim needs. */
    NOT_ENOUGH_GPUS,
    /** The tenant id is already reserved. */
    DUPLICATE_TENANT,
    /** The node or GPU named is not in the ledger. */
    UNKNOWN_TARGET,
    /** The slice does not follow the granularity rules. */
    GRANULARITY,
    /** Another placement took the capacity between scoring and commit, and retries ran out. */
    CONFLICT,
    /** The claim requires its GPUs on one NUMA node and the node has no such admissible set. */
    NUMA,
    /** A GPU the claim must include is not on the node, or cannot take the claim. */
    MUST_INCLUDE,
    /** Not enough free CPU on the node (requested and available in millicores). */
    INSUFFICIENT_CPU,
    /** Not enough free host memory on the node (requested and available in bytes). */
    INSUFFICIENT_HOST_MEMORY
}
