package io.qgpu.testkit.invariants;

/**
 * The rules every GPU scheduler's output must keep, as the invariant checkers name them in a
 * {@link Violation}.
 *
 * <pre>{@code
 * violations.stream().filter(v -> v.invariant() == Invariant.MEMORY).toList();
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public enum Invariant {
    /** The memory reserved on a GPU never exceeds its device memory. */
    MEMORY("memory is never oversubscribed"),
    /** Guaranteed compute of each priority class on a GPU sums to at most 100%. */
    COMPUTE("guaranteed compute per priority class is at most 100% per GPU, and below 100% where a tenant of the class"
            + " with request 0 would starve (unless the rules admit such tenants)"),
    /**
     * A GPU holds at most {@code GranularityRules.maxTenants(gpu)} tenants: a MIG instance one, unless the
     * rules share MIG instances.
     */
    TENANTS("tenants per GPU stay within the granularity rules"),
    /** An exclusive tenant is alone on its GPUs and holds their whole memory. */
    EXCLUSIVE("an exclusive tenant is alone on whole GPUs"),
    /** Placed claims follow the granularity grid (memory unit and minimum, compute unit). */
    GRANULARITY("placed sizes are on the granularity grid"),
    /** All tenants with one affinity label are on the same node and the same set of GPUs. */
    AFFINITY("tenants of an affinity label share one GPU set"),
    /** No two tenants with the same anti-affinity label share a GPU. */
    ANTI_AFFINITY("tenants of an anti-affinity label never share a GPU"),
    /** A GPU's tenants all carry the same exclusion label, or all carry none. */
    EXCLUSION("a GPU holds tenants of one exclusion label only"),
    /** Node-label, GPU-model and GPU-UUID selectors are honoured. */
    SELECTORS("selectors are honoured"),
    /** A GPU kept for one priority class holds only tenants of that class. */
    RESERVED_CLASS("GPUs kept for a priority class hold only that class"),
    /** No placement lands on an unhealthy GPU. */
    UNHEALTHY("unhealthy GPUs get no placements"),
    /** A placement names a known node and GPUs of that node. */
    TARGETS("placements name known nodes and their GPUs"),
    /**
     * The CPU and host memory reserved on a node stay within what the node declares (a resource it
     * does not declare is not tracked there).
     */
    HOST("CPU and host memory reserved on a node stay within its declared capacity"),
    /** A tenant id is placed at most once at a time. */
    DUPLICATE_TENANT("a tenant is placed at most once"),
    /** The scheduler answers every call with a result for the claim it was given, without throwing. */
    PROTOCOL("results match the claim asked for"),
    /** After every tenant is released, every healthy GPU can be taken whole again. */
    CAPACITY_RESTORED("release restores capacity"),
    /** The same inventory and operations give the same placements. */
    DETERMINISM("the same input gives the same placement"),
    /** A claim that fits an empty cluster is placed on an empty cluster. */
    COMPLETENESS("a claim that fits an empty cluster is placed");

    private final String rule;

    Invariant(String rule) {
        this.rule = rule;
    }

    /** The rule in words. */
    public String rule() {
        return rule;
    }
}
