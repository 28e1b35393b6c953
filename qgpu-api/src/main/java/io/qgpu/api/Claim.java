package io.qgpu.api;

import org.jspecify.annotations.Nullable;
import java.util.Optional;

/**
 * What a workload asks for: the same slice (memory and compute) on each of {@code gpuCount} GPUs of
 * one node, or {@code gpuCount} whole GPUs ({@link #exclusive()}).
 *
 * <p>Compute is in percent of one GPU: {@code computeRequest} is guaranteed (admitted per priority
 * class, each class up to 100% per GPU), {@code computeLimit} is the most it may use. An exclusive
 * claim takes a GPU's whole memory and 100% compute, and shares the GPU with nobody.
 *
 * <pre>{@code
 * Claim online = Claim.builder("infer-1")
 *         .memoryGiB(8).compute(40, 70).priority(PriorityClass.ONLINE).priorityWithinClass(100)
 *         .locality(Locality.none().withAntiAffinity("replicas-of-infer"))
 *         .build();
 * Claim training = Claim.builder("train-1").gpus(4).exclusive().priority(PriorityClass.OFFLINE).build();
 * Claim withHost = Claim.builder("infer-2").memoryGiB(8).compute(40, 70).cpuMillis(4_000).hostMemoryGiB(16).build();
 * Claim cpuOnly = Claim.builder("etl-1").hostOnly().cpuMillis(500).hostMemoryGiB(2).build();   // no GPU
 * }</pre>
 *
 * <p><b>Host resources.</b> Besides its GPU slices a claim may ask for CPU (millicores) and host
 * memory (bytes) on its node ({@link #host()}); the ledger reserves them with the slices, all or
 * nothing. A <b>host-only</b> claim has {@code gpuCount} 0: it asks for no GPU memory and no GPU
 * compute (memory 0, compute request and limit 0), must ask for some CPU or host memory, is not
 * exclusive and carries no GPU selectors (models, UUIDs, must-include) and no locality labels (they
 * are about GPUs); it goes on any node whose labels and host capacity allow, with GPUs or not.
 *
 * @param tenantId          unique id of the tenant (container, process, in-JVM workload)
 * @param gpuCount          number of GPUs, all on one node; 0 for a host-only claim
 * @param memoryPerGpuBytes memory on each GPU; 0 for an exclusive claim (it takes the whole device) and
 *                          for a host-only claim
 * @param computeRequest    guaranteed compute per GPU in percent, 0..100 (0 for a host-only claim)
 * @param computeLimit      maximum compute per GPU in percent, computeRequest..100 and at least 1
 *                          (0 for a host-only claim)
 * @param priority          online or offline
 * @param exclusive         whole GPUs, shared with nobody
 * @param selectors         node and GPU selectors
 * @param locality          affinity, anti-affinity and exclusion labels
 * @param nodePolicy        overrides the engine's node-level policy for this claim
 * @param gpuPolicy         overrides the engine's GPU-level policy for this claim
 * @param numa              whether the GPUs must share one CPU NUMA node ({@link NumaPolicy#PREFERRED} by default)
 * @param priorityWithinClass order among claims of the same {@link #priority()} class, higher first (0 by
 *                          default, any int, like a Kubernetes pod priority). Preemption plans evict only
 *                          tenants that rank lower: see {@link #outranks(Claim)}
 * @param host              CPU and host memory asked for on the node ({@link HostRequest#none()} by default)
 *
 * <p>Thread safety: immutable.
 */
public record Claim(String tenantId, int gpuCount, long memoryPerGpuBytes, int computeRequest, int computeLimit,
                    PriorityClass priority, boolean exclusive, Selectors selectors, Locality locality,
                    Optional<PlacementPolicy> nodePolicy, Optional<PlacementPolicy> gpuPolicy, NumaPolicy numa,
                    int priorityWithinClass, HostRequest host) {

    public Claim {
        Validate.name("claim.tenantId", tenantId, Validate.MAX_TENANT_ID_LENGTH);
        String f = "claim[" + tenantId + "]";
        Validate.between(f + ".gpuCount", gpuCount, 0, 1024);
        Validate.notNull(f + ".priority", priority);
        Validate.notNull(f + ".selectors", selectors);
        Validate.notNull(f + ".locality", locality);
        Validate.notNull(f + ".nodePolicy", nodePolicy);
        Validate.notNull(f + ".gpuPolicy", gpuPolicy);
        Validate.notNull(f + ".numa", numa);
        Validate.notNull(f + ".host", host);
        if (gpuCount == 0) {
            hostOnlyRules(f, memoryPerGpuBytes, computeRequest, computeLimit, exclusive, selectors, locality, host);
        } else {
            if (selectors.mustIncludeCount() > gpuCount) {
                throw new InvalidValueException(f + ".selectors.mustInclude", selectors.mustIncludeCount(),
                        "names more GPUs than the claim asks for (" + gpuCount + ")");
            }
            gpuRules(f, memoryPerGpuBytes, computeRequest, computeLimit, exclusive);
        }
    }

    private static void gpuRules(String f, long memoryPerGpuBytes, int computeRequest, int computeLimit,
                                 boolean exclusive) {
        if (exclusive) {
            if (memoryPerGpuBytes != 0) {
                throw new InvalidValueException(f + ".memoryPerGpuBytes", memoryPerGpuBytes,
                        "must be 0 for an exclusive claim (it takes the whole GPU)");
            }
            if (computeRequest != 100 || computeLimit != 100) {
                throw new InvalidValueException(f + ".computeRequest", computeRequest,
                        "an exclusive claim has request and limit 100");
            }
        } else {
            Validate.atLeast(f + ".memoryPerGpuBytes", memoryPerGpuBytes, 1);
            Validate.between(f + ".computeRequest", computeRequest, 0, 100);
            if (computeLimit < Math.max(1, computeRequest) || computeLimit > 100) {
                throw new InvalidValueException(f + ".computeLimit", computeLimit,
                        "must be between max(1, computeRequest=" + computeRequest + ") and 100");
            }
        }
    }

    /** A claim with priority 0 within its class and without host resources ({@link HostRequest#none()}). */
    public Claim(String tenantId, int gpuCount, long memoryPerGpuBytes, int computeRequest, int computeLimit,
                 PriorityClass priority, boolean exclusive, Selectors selectors, Locality locality,
                 Optional<PlacementPolicy> nodePolicy, Optional<PlacementPolicy> gpuPolicy, NumaPolicy numa) {
        this(tenantId, gpuCount, memoryPerGpuBytes, computeRequest, computeLimit, priority, exclusive, selectors,
                locality, nodePolicy, gpuPolicy, numa, 0, HostRequest.none());
    }

    /** A claim without host resources ({@link HostRequest#none()}). */
    public Claim(String tenantId, int gpuCount, long memoryPerGpuBytes, int computeRequest, int computeLimit,
                 PriorityClass priority, boolean exclusive, Selectors selectors, Locality locality,
                 Optional<PlacementPolicy> nodePolicy, Optional<PlacementPolicy> gpuPolicy, NumaPolicy numa,
                 int priorityWithinClass) {
        this(tenantId, gpuCount, memoryPerGpuBytes, computeRequest, computeLimit, priority, exclusive, selectors,
                locality, nodePolicy, gpuPolicy, numa, priorityWithinClass, HostRequest.none());
    }

    /** A claim with priority 0 within its class. */
    public Claim(String tenantId, int gpuCount, long memoryPerGpuBytes, int computeRequest, int computeLimit,
                 PriorityClass priority, boolean exclusive, Selectors selectors, Locality locality,
                 Optional<PlacementPolicy> nodePolicy, Optional<PlacementPolicy> gpuPolicy, NumaPolicy numa,
                 HostRequest host) {
        this(tenantId, gpuCount, memoryPerGpuBytes, computeRequest, computeLimit, priority, exclusive, selectors,
                locality, nodePolicy, gpuPolicy, numa, 0, host);
    }

    /**
     * Whether this claim ranks strictly above {@code other}: an online claim above every offline one,
     * and within one class the higher {@link #priorityWithinClass()}. Equal rank is not above.
     */
    public boolean outranks(Claim other) {
        Validate.notNull("other", other);
        if (priority != other.priority) {
            return priority == PriorityClass.ONLINE;
        }
        return priorityWithinClass > other.priorityWithinClass;
    }

    private static void hostOnlyRules(String f, long memory, int request, int limit, boolean exclusive,
                                      Selectors selectors, Locality locality, HostRequest host) {
        String why = "a host-only claim (0 GPUs) ";
        if (exclusive) {
            throw new InvalidValueException(f + ".exclusive", true, why + "cannot be exclusive");
        }
        if (memory != 0) {
            throw new InvalidValueException(f + ".memoryPerGpuBytes", memory, why + "asks for no GPU memory: must be 0");
        }
        if (request != 0) {
            throw new InvalidValueException(f + ".computeRequest", request, why + "asks for no GPU compute: must be 0");
        }
        if (limit != 0) {
            throw new InvalidValueException(f + ".computeLimit", limit, why + "asks for no GPU compute: must be 0");
        }
        if (host.isNone()) {
            throw new InvalidValueException(f + ".host", "cpuMillis 0, memoryBytes 0",
                    why + "must ask for CPU or host memory");
        }
        if (!selectors.includeModels().isEmpty() || !selectors.excludeModels().isEmpty()
                || !selectors.includeUuids().isEmpty() || !selectors.excludeUuids().isEmpty()
                || selectors.mustIncludeCount() > 0) {
            throw new InvalidValueException(f + ".selectors", selectors,
                    why + "takes no GPU: GPU model, UUID and must-include selectors do not apply (node labels do)");
        }
        if (!locality.isNone()) {
            throw new InvalidValueException(f + ".locality", locality,
                    why + "takes no GPU: affinity, anti-affinity and exclusion labels do not apply");
        }
    }

    /** Whether the claim asks for host resources only (no GPU). */
    public boolean hostOnly() {
        return gpuCount == 0;
    }

    /** A claim with {@link NumaPolicy#PREFERRED}. */
    public Claim(String tenantId, int gpuCount, long memoryPerGpuBytes, int computeRequest, int computeLimit,
                 PriorityClass priority, boolean exclusive, Selectors selectors, Locality locality,
                 Optional<PlacementPolicy> nodePolicy, Optional<PlacementPolicy> gpuPolicy) {
        this(tenantId, gpuCount, memoryPerGpuBytes, computeRequest, computeLimit, priority, exclusive, selectors,
                locality, nodePolicy, gpuPolicy, NumaPolicy.PREFERRED);
    }

    /** Total memory over all GPUs (0 for exclusive claims: it depends on the devices chosen). */
    public long totalMemoryBytes() {
        return memoryPerGpuBytes * gpuCount;
    }

    public static Builder builder(String tenantId) {
        return new Builder(tenantId);
    }

    /** A builder seeded from this claim, for example to rename it. */
    public Builder toBuilder() {
        Builder b = new Builder(tenantId).gpus(gpuCount).priority(priority).selectors(selectors).locality(locality)
                .numa(numa).host(host)
                .priorityWithinClass(priorityWithinClass);
        nodePolicy.ifPresent(b::nodePolicy);
        gpuPolicy.ifPresent(b::gpuPolicy);
        if (exclusive) {
            b.exclusive();
        } else if (gpuCount > 0) {
            b.memoryBytes(memoryPerGpuBytes).compute(computeRequest, computeLimit);
        }
        return b;
    }

    /**
     * Fail-fast builder. Defaults: 1 GPU, compute request 0 and limit 100 (best effort), offline,
     * no selectors, no locality labels, no host resources. Memory must be given unless
     * {@link #exclusive()} or host-only ({@link #hostOnly()}, or {@code gpus(0)}: then the compute
     * defaults to 0/0 unless set).
     */
    public static final class Builder {
        private String tenantId;
        private int gpuCount = 1;
        private long memoryPerGpuBytes;
        private int computeRequest = 0;
        private int computeLimit = 100;
        private PriorityClass priority = PriorityClass.OFFLINE;
        private boolean exclusive;
        private Selectors selectors = Selectors.none();
        private Locality locality = Locality.none();
        private @Nullable PlacementPolicy nodePolicy;
        private @Nullable PlacementPolicy gpuPolicy;
        private NumaPolicy numa = NumaPolicy.PREFERRED;
        private int priorityWithinClass;
        private boolean computeSet;
        private long cpuMillis;
        private long hostMemoryBytes;

        private Builder(String tenantId) {
            this.tenantId = tenantId;
        }

        public Builder tenantId(String id) { this.tenantId = id; return this; }
        public Builder gpus(int count) { this.gpuCount = count; return this; }
        public Builder memoryBytes(long bytes) { this.memoryPerGpuBytes = bytes; return this; }

        public Builder memoryGiB(long gib) {
            if (gib < 0 || gib > Long.MAX_VALUE / GpuDevice.GIB) {
                throw new InvalidValueException("claim[" + tenantId + "].memoryGiB", gib, "must be between 0 and 8589934591");
            }
            this.memoryPerGpuBytes = gib * GpuDevice.GIB;
            return this;
        }

        /** Guaranteed and maximum compute, percent of one GPU. */
        public Builder compute(int request, int limit) {
            this.computeRequest = request;
            this.computeLimit = limit;
            this.computeSet = true;
            return this;
        }

        public Builder priority(PriorityClass p) { this.priority = p; return this; }

        /** Whole GPUs: memory 0 (all of it), compute 100/100. */
        public Builder exclusive() {
            this.exclusive = true;
            this.memoryPerGpuBytes = 0;
            this.computeRequest = 100;
            this.computeLimit = 100;
            return this;
        }

        /** Host resources only: no GPU ({@code gpuCount} 0, no GPU memory or compute). */
        public Builder hostOnly() {
            this.gpuCount = 0;
            this.memoryPerGpuBytes = 0;
            this.computeRequest = 0;
            this.computeLimit = 0;
            this.computeSet = true;
            return this;
        }

        /** CPU on the node, millicores (1000 = one CPU; Kubernetes {@code 500m} = 500). */
        public Builder cpuMillis(long millis) {
            this.cpuMillis = millis;
            return this;
        }

        /** Host memory on the node, bytes. */
        public Builder hostMemoryBytes(long bytes) {
            this.hostMemoryBytes = bytes;
            return this;
        }

        /** Host memory on the node, GiB. */
        public Builder hostMemoryGiB(long gib) {
            if (gib < 0 || gib > Long.MAX_VALUE / GpuDevice.GIB) {
                throw new InvalidValueException("claim[" + tenantId + "].hostMemoryGiB", gib, "must be between 0 and 8589934591");
            }
            this.hostMemoryBytes = gib * GpuDevice.GIB;
            return this;
        }

        /** Both host resources at once. */
        public Builder host(HostRequest r) {
            Validate.notNull("claim[" + tenantId + "].host", r);
            this.cpuMillis = r.cpuMillis();
            this.hostMemoryBytes = r.memoryBytes();
            return this;
        }

        public Builder selectors(Selectors s) { this.selectors = s; return this; }
        public Builder locality(Locality l) { this.locality = l; return this; }
        public Builder nodePolicy(PlacementPolicy p) { this.nodePolicy = p; return this; }
        public Builder gpuPolicy(PlacementPolicy p) { this.gpuPolicy = p; return this; }
        /** {@link NumaPolicy#REQUIRED}: all GPUs on one NUMA node, or refused. */
        public Builder numa(NumaPolicy p) { this.numa = p; return this; }
        /** Order within the priority class, higher first (default 0). */
        public Builder priorityWithinClass(int p) { this.priorityWithinClass = p; return this; }

        public Claim build() {
            String f = "claim[" + tenantId + "]";
            HostRequest host = new HostRequest(Validate.atLeast(f + ".host.cpuMillis", cpuMillis, 0),
                    Validate.atLeast(f + ".host.memoryBytes", hostMemoryBytes, 0));
            boolean hostOnlyDefaults = gpuCount == 0 && !computeSet && !exclusive;
            return new Claim(tenantId, gpuCount, memoryPerGpuBytes, hostOnlyDefaults ? 0 : computeRequest,
                    hostOnlyDefaults ? 0 : computeLimit, priority, exclusive, selectors, locality,
                    Optional.ofNullable(nodePolicy), Optional.ofNullable(gpuPolicy), numa, priorityWithinClass, host);
        }
    }
}
