package io.qgpu.api;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;

/**
 * The host resources reserved on one node, one {@link HostHolding} per tenant that asked for any,
 * with the totals precomputed. Immutable: the ledger replaces it ({@link #with}, {@link #without}).
 * What is free depends on the node's {@link HostCapacity}: see {@link NodeState#cpuMillisFree()}.
 *
 * <pre>{@code
 * HostState h = HostState.empty().with(new HostHolding("job-1", 500, 1L << 30));
 * h.cpuMillisUsed();    // 500
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public final class HostState {
    private static final HostState EMPTY = new HostState(List.of());

    private final List<HostHolding> holdings;
    private final long cpuMillisUsed;
    private final long memoryBytesUsed;

    private HostState(List<HostHolding> holdings) {
        this.holdings = holdings;
        long cpu = 0;
        long mem = 0;
        for (HostHolding h : holdings) {
            cpu = Math.addExact(cpu, h.cpuMillis());
            mem = Math.addExact(mem, h.memoryBytes());
        }
        this.cpuMillisUsed = cpu;
        this.memoryBytesUsed = mem;
    }

    /** Nothing reserved. */
    public static HostState empty() {
        return EMPTY;
    }

    /**
     * A state with exactly these holdings; nothing is checked against capacity here.
     *
     * @throws InvalidValueException if a tenant is listed twice
     */
    public static HostState of(List<HostHolding> holdings) {
        List<HostHolding> copy = Validate.list("hostState.holdings", holdings);
        java.util.Set<String> seen = new java.util.HashSet<>();
        for (HostHolding h : copy) {
            if (!seen.add(h.tenantId())) {
                throw new InvalidValueException("hostState.holdings.tenantId", h.tenantId(), "is duplicated");
            }
        }
        return copy.isEmpty() ? EMPTY : new HostState(copy);
    }

    public List<HostHolding> holdings() {
        return holdings;
    }

    /** Sum of the CPU reserved, millicores. */
    public long cpuMillisUsed() {
        return cpuMillisUsed;
    }

    /** Sum of the host memory reserved, bytes. */
    public long memoryBytesUsed() {
        return memoryBytesUsed;
    }

    public boolean isEmpty() {
        return holdings.isEmpty();
    }

    public Optional<HostHolding> holding(String tenantId) {
        for (HostHolding h : holdings) {
            if (h.tenantId().equals(tenantId)) {
                return Optional.of(h);
            }
        }
        return Optional.empty();
    }

    /** A new state with one more holding. */
    public HostState with(HostHolding holding) {
        Validate.notNull("hostState.holding", holding);
        List<HostHolding> copy = new ArrayList<>(holdings.size() + 1);
        copy.addAll(holdings);
        copy.add(holding);
        return new HostState(Collections.unmodifiableList(copy));
    }

    /** A new state without the tenant's holding (the same state if it holds nothing here). */
    public HostState without(String tenantId) {
        if (holding(tenantId).isEmpty()) {
            return this;
        }
        List<HostHolding> copy = new ArrayList<>(holdings.size());
        for (HostHolding h : holdings) {
            if (!h.tenantId().equals(tenantId)) {
                copy.add(h);
            }
        }
        return copy.isEmpty() ? EMPTY : new HostState(Collections.unmodifiableList(copy));
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof HostState s && s.holdings.equals(holdings);
    }

    @Override
    public int hashCode() {
        return holdings.hashCode();
    }

    @Override
    public String toString() {
        return "HostState[cpu " + cpuMillisUsed + "m, memory " + memoryBytesUsed + " B, tenants " + holdings.size() + "]";
    }
}
