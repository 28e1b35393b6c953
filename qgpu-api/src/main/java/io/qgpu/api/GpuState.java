package io.qgpu.api;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;

/**
 * One GPU and what is reserved on it, with the totals precomputed. Immutable: the ledger replaces
 * a state with a new one ({@link #with(Holding)}, {@link #without(String)}).
 *
 * <pre>{@code
 * GpuState s = GpuState.empty(gpu).with(holding);
 * s.memoryFree();                       // device memory minus reservations
 * s.guaranteed(PriorityClass.ONLINE);   // sum of online compute requests, percent
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public final class GpuState {
    private final GpuDevice device;
    private final List<Holding> holdings;
    private final long memoryUsed;
    private final int onlineGuaranteed;
    private final int offlineGuaranteed;
    private final boolean exclusive;
    /**
     * {@code holdings.size()}, kept here: the placement engine asks every GPU of a changed node for its
     * tenant count and emptiness, and this field is on the state's own cache line, the list is not.
     */
    private final int tenants;

    private GpuState(GpuDevice device, List<Holding> holdings) {
        this.device = device;
        this.holdings = holdings;
        long mem = 0;
        int on = 0;
        int off = 0;
        boolean ex = false;
        for (Holding h : holdings) {
            mem += h.memoryBytes();
            if (h.priority() == PriorityClass.ONLINE) {
                on += h.computeRequest();
            } else {
                off += h.computeRequest();
            }
            ex |= h.exclusive();
        }
        this.memoryUsed = mem;
        this.onlineGuaranteed = on;
        this.offlineGuaranteed = off;
        this.exclusive = ex;
        this.tenants = holdings.size();
    }

    public static GpuState empty(GpuDevice device) {
        return new GpuState(Validate.notNull("gpuState.device", device), List.of());
    }

    /** A state with exactly these holdings; nothing is checked against capacity here. */
    public static GpuState of(GpuDevice device, List<Holding> holdings) {
        return new GpuState(Validate.notNull("gpuState.device", device),
                Validate.list("gpuState[" + device.uuid() + "].holdings", holdings));
    }

    public GpuDevice device() {
        return device;
    }

    public String uuid() {
        return device.uuid();
    }

    public List<Holding> holdings() {
        return holdings;
    }

    public int tenants() {
        return tenants;
    }

    public long memoryUsed() {
        return memoryUsed;
    }

    public long memoryFree() {
        return device.memoryBytes() - memoryUsed;
    }

    /** Sum of guaranteed compute of this class, percent. */
    public int guaranteed(PriorityClass priority) {
        return priority == PriorityClass.ONLINE ? onlineGuaranteed : offlineGuaranteed;
    }

    /** Guaranteed compute still free in this class, percent. */
    public int computeFree(PriorityClass priority) {
        return 100 - guaranteed(priority);
    }

    /** Whether a tenant holds this GPU exclusively. */
    public boolean heldExclusively() {
        return exclusive;
    }

    public boolean isEmpty() {
        return tenants == 0;
    }

    public Optional<Holding> holding(String tenantId) {
        for (Holding h : holdings) {
            if (h.tenantId().equals(tenantId)) {
                return Optional.of(h);
            }
        }
        return Optional.empty();
    }

    /** Whether a holding carries this affinity label. */
    public boolean hasAffinity(String label) {
        for (Holding h : holdings) {
            if (h.locality().affinity().filter(label::equals).isPresent()) {
                return true;
            }
        }
        return false;
    }

    /** Whether a holding carries this anti-affinity label. */
    public boolean hasAntiAffinity(String label) {
        for (Holding h : holdings) {
            if (h.locality().antiAffinity().filter(label::equals).isPresent()) {
                return true;
            }
        }
        return false;
    }

    /**
     * The exclusion label this GPU is dedicated to, if its holdings have one. A GPU's holdings all
     * carry the same exclusion label or none (the ledger keeps it so).
     */
    public Optional<String> exclusionLabel() {
        return tenants == 0 ? Optional.empty() : holdings.get(0).locality().exclusion();
    }

    /** A new state with one more holding. */
    public GpuState with(Holding holding) {
        List<Holding> copy = new ArrayList<>(holdings.size() + 1);
        copy.addAll(holdings);
        copy.add(Validate.notNull("gpuState.holding", holding));
        return new GpuState(device, Collections.unmodifiableList(copy));
    }

    /** A new state without the tenant's holding (the same state if it holds nothing here). */
    public GpuState without(String tenantId) {
        if (holding(tenantId).isEmpty()) {
            return this;
        }
        List<Holding> copy = new ArrayList<>(holdings.size());
        for (Holding h : holdings) {
            if (!h.tenantId().equals(tenantId)) {
                copy.add(h);
            }
        }
        return new GpuState(device, Collections.unmodifiableList(copy));
    }

    /** The same holdings on a device with new attributes (health, policy). */
    public GpuState withDevice(GpuDevice newDevice) {
        if (!newDevice.uuid().equals(device.uuid())) {
            throw new InvalidValueException("gpuState.device.uuid", newDevice.uuid(), "must stay " + device.uuid());
        }
        return new GpuState(newDevice, holdings);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof GpuState s && s.device.equals(device) && s.holdings.equals(holdings);
    }

    @Override
    public int hashCode() {
        return device.hashCode() * 31 + holdings.hashCode();
    }

    @Override
    public String toString() {
        return "GpuState[" + device.uuid() + " mem " + memoryUsed + "/" + device.memoryBytes() + " online "
                + onlineGuaranteed + "% offline " + offlineGuaranteed + "% tenants " + holdings.size() + "]";
    }
}
