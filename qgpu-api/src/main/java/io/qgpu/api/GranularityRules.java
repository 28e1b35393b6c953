package io.qgpu.api;

/**
 * Units in which GPU slices are handed out, and how many tenants one GPU may hold.
 * qGPU's rules are the default: memory in 1 GiB units (minimum 1 GiB), compute in 5% units,
 * at most 16 tenants per GPU and at most one tenant per 4 GiB of device memory. A MIG instance
 * ({@link GpuDevice#migInstance()}) is a whole device of its own and holds one tenant, unless
 * {@link #shareMigInstances()}; every preset keeps that default.
 *
 * <p>Rules other than the presets ({@link #ofDefaults()}, {@link #hami()}, {@link #gpuManager()},
 * {@link #preset(String)}) are made with the one {@link Builder}: {@link #custom()} starts from qGPU's
 * defaults, {@link #toBuilder()} from any rules.
 *
 * <pre>{@code
 * GranularityRules qgpu = GranularityRules.ofDefaults();
 * GranularityRules hami = GranularityRules.hami();
 * GranularityRules mine = GranularityRules.custom()
 *         .memoryUnitBytes(512 * GpuDevice.MIB).computeUnit(1).maxTenantsPerGpu(32).build();
 * qgpu.maxTenants(t4);   // 4 for a 16 GiB T4: min(16, 16 GiB / 4 GiB)
 * qgpu.keepsWhole(mig);  // true for a device whose UUID is MIG-...: one tenant per MIG instance
 * qgpu.toBuilder().shareMigInstances(true).build().keepsWhole(mig);   // false: tenants may share the instance
 * }</pre>
 *
 * @param name                     a label for reports
 * @param memoryUnitBytes          memory requests must be a multiple of this
 * @param minMemoryBytes           smallest memory request (for a non-exclusive claim)
 * @param computeUnit              compute requests and limits (percent) must be a multiple of this
 * @param maxTenantsPerGpu         hard cap on tenants per GPU
 * @param memoryPerTenantSlotBytes if {@code > 0}, a GPU also holds at most {@code memory / this} tenants
 * @param admitZeroRequestOnBookedGpu whether a claim with compute request 0 may go to a GPU whose
 *                                 guaranteed compute for its class is fully booked (default false:
 *                                 refused with {@code INSUFFICIENT_COMPUTE}, since it would starve
 *                                 behind the guaranteed tenants; true admits such best-effort tenants)
 * @param shareMigInstances        whether a MIG instance ({@link GpuDevice#migInstance()}, UUID {@code MIG-...})
 *                                 may hold more than one tenant (default false: a MIG instance is a whole
 *                                 device of its own, and a second tenant is refused with
 *                                 {@code MIG_INSTANCE_IN_USE}; true shares it like any GPU, within the
 *                                 other rules)
 *
 * <p>Thread safety: immutable.
 */
public record GranularityRules(String name, long memoryUnitBytes, long minMemoryBytes, int computeUnit,
                               int maxTenantsPerGpu, long memoryPerTenantSlotBytes,
                               boolean admitZeroRequestOnBookedGpu, boolean shareMigInstances) {

    public GranularityRules {
        Validate.notBlank("rules.name", name);
        Validate.atLeast("rules.memoryUnitBytes", memoryUnitBytes, 1);
        Validate.atLeast("rules.minMemoryBytes", minMemoryBytes, 0);
        Validate.between("rules.computeUnit", computeUnit, 1, 100);
        if (100 % computeUnit != 0) {
            throw new InvalidValueException("rules.computeUnit", computeUnit, "must divide 100");
        }
        Validate.atLeast("rules.maxTenantsPerGpu", maxTenantsPerGpu, 1);
        Validate.atLeast("rules.memoryPerTenantSlotBytes", memoryPerTenantSlotBytes, 0);
    }

    /**
     * Rules that keep each MIG instance for one tenant.
     *
     * @deprecated use {@link #custom()} (or {@link #toBuilder()}) and {@link Builder#build()}; every rule has a
     *             setter there
     */
    @Deprecated
    @SuppressWarnings("InlineMeSuggester")   // the replacement is the builder, not the canonical constructor
    public GranularityRules(String name, long memoryUnitBytes, long minMemoryBytes, int computeUnit,
                            int maxTenantsPerGpu, long memoryPerTenantSlotBytes, boolean admitZeroRequestOnBookedGpu) {
        this(name, memoryUnitBytes, minMemoryBytes, computeUnit, maxTenantsPerGpu, memoryPerTenantSlotBytes,
                admitZeroRequestOnBookedGpu, false);
    }

    /**
     * Rules that refuse zero-request claims on GPUs whose guaranteed compute is fully booked and keep each
     * MIG instance for one tenant.
     *
     * @deprecated use {@link #custom()} (or {@link #toBuilder()}) and {@link Builder#build()}; every rule has a
     *             setter there
     */
    @Deprecated
    @SuppressWarnings("InlineMeSuggester")   // the replacement is the builder, not the canonical constructor
    public GranularityRules(String name, long memoryUnitBytes, long minMemoryBytes, int computeUnit,
                            int maxTenantsPerGpu, long memoryPerTenantSlotBytes) {
        this(name, memoryUnitBytes, minMemoryBytes, computeUnit, maxTenantsPerGpu, memoryPerTenantSlotBytes, false, false);
    }

    /**
     * A copy with {@link #admitZeroRequestOnBookedGpu()} set to {@code admit}.
     *
     * @deprecated use {@code toBuilder().admitZeroRequestOnBookedGpu(admit).build()}
     */
    @Deprecated
    public GranularityRules withAdmitZeroRequestOnBookedGpu(boolean admit) {
        return new GranularityRules(name, memoryUnitBytes, minMemoryBytes, computeUnit, maxTenantsPerGpu,
                memoryPerTenantSlotBytes, admit, shareMigInstances);
    }

    /**
     * A copy with {@link #shareMigInstances()} set to {@code share}.
     *
     * @deprecated use {@code toBuilder().shareMigInstances(share).build()}
     */
    @Deprecated
    public GranularityRules withShareMigInstances(boolean share) {
        return new GranularityRules(name, memoryUnitBytes, minMemoryBytes, computeUnit, maxTenantsPerGpu,
                memoryPerTenantSlotBytes, admitZeroRequestOnBookedGpu, share);
    }

    /**
     * Whether these rules keep {@code gpu} for a single tenant because it is a MIG instance
     * ({@link GpuDevice#migInstance()} and not {@link #shareMigInstances()}).
     */
    public boolean keepsWhole(GpuDevice gpu) {
        return !shareMigInstances && gpu.migInstance();
    }

    /** qGPU: 1 GiB memory units (min 1 GiB), 5% compute units, at most min(16, memory / 4 GiB) tenants. */
    public static GranularityRules ofDefaults() {
        return new GranularityRules("qgpu", GpuDevice.GIB, GpuDevice.GIB, 5, 16, 4 * GpuDevice.GIB, false, false);
    }

    /** HAMi: memory in MiB, compute in 1% units, 10 tenants per GPU. */
    public static GranularityRules hami() {
        return new GranularityRules("hami", GpuDevice.MIB, GpuDevice.MIB, 1, 10, 0, false, false);
    }

    /** gpu-manager: memory in 256 MiB units, compute in 1% units. */
    public static GranularityRules gpuManager() {
        return new GranularityRules("gpu-manager", 256 * GpuDevice.MIB, 256 * GpuDevice.MIB, 1, 100, 0, false, false);
    }

    /** Looks a preset up by name: {@code qgpu}, {@code hami}, {@code gpu-manager}. */
    public static GranularityRules preset(String name) {
        return switch (Validate.notNull("rules.preset", name)) {
            case "qgpu" -> ofDefaults();
            case "hami" -> hami();
            case "gpu-manager" -> gpuManager();
            default -> throw new InvalidValueException("rules.preset", name, "must be one of qgpu, hami, gpu-manager");
        };
    }

    /**
     * The most tenants {@code gpu} may hold under these rules (at least 1): 1 for a MIG instance the rules
     * keep whole ({@link #keepsWhole}), else {@link #maxTenantsPerGpu()}, and with
     * {@link #memoryPerTenantSlotBytes()} at most one per slot of device memory.
     */
    public int maxTenants(GpuDevice gpu) {
        if (keepsWhole(gpu)) {
            return 1;
        }
        if (memoryPerTenantSlotBytes == 0) {
            return maxTenantsPerGpu;
        }
        long bySlots = gpu.memoryBytes() / memoryPerTenantSlotBytes;
        return (int) Math.max(1, Math.min(maxTenantsPerGpu, bySlots));
    }

    /** Refuses a claim whose sizes do not fit these units, naming the field. A host-only claim has no GPU sizes. */
    public void validate(Claim claim) {
        if (claim.hostOnly()) {
            return;
        }
        if (!claim.exclusive()) {
            if (claim.memoryPerGpuBytes() < minMemoryBytes) {
                throw new InvalidValueException(field(claim, ".memoryPerGpuBytes"), claim.memoryPerGpuBytes(),
                        "must be at least " + minMemoryBytes + " under the " + name + " rules");
            }
            if (claim.memoryPerGpuBytes() % memoryUnitBytes != 0) {
                throw new InvalidValueException(field(claim, ".memoryPerGpuBytes"), claim.memoryPerGpuBytes(),
                        "must be a multiple of " + memoryUnitBytes + " under the " + name + " rules");
            }
        }
        if (claim.computeRequest() % computeUnit != 0) {
            throw new InvalidValueException(field(claim, ".computeRequest"), claim.computeRequest(),
                    "must be a multiple of " + computeUnit + " under the " + name + " rules");
        }
        if (claim.computeLimit() % computeUnit != 0) {
            throw new InvalidValueException(field(claim, ".computeLimit"), claim.computeLimit(),
                    "must be a multiple of " + computeUnit + " under the " + name + " rules");
        }
    }

    /** A claim's field name for a message (built only when one is thrown: the ledger validates every reservation). */
    private static String field(Claim claim, String suffix) {
        return "claim[" + claim.tenantId() + "]" + suffix;
    }

    /**
     * The builder of rules: qGPU's defaults ({@link #ofDefaults()}) named {@code custom}; each setter changes one
     * rule, {@link Builder#build()} validates them all.
     */
    public static Builder custom() {
        return new Builder(ofDefaults(), "custom");
    }

    /** The builder holding these rules, name included, to change some of them. */
    public Builder toBuilder() {
        return new Builder(this, name);
    }

    /**
     * The builder holding {@code base}'s rules, named {@code custom}.
     *
     * @deprecated use {@code base.toBuilder()} (which keeps {@code base}'s name; set {@code name("custom")} for the
     *             old name)
     */
    @Deprecated
    public static Builder from(GranularityRules base) {
        return new Builder(base, "custom");
    }

    /**
     * The one way to make rules other than the presets: {@link GranularityRules#custom()} or
     * {@link GranularityRules#toBuilder()}, a setter per rule, then {@link #build()}.
     *
     * <p>Thread safety: not thread-safe; use one builder on one thread.
     */
    public static final class Builder {
        private String name;
        private long memoryUnitBytes;
        private long minMemoryBytes;
        private int computeUnit;
        private int maxTenantsPerGpu;
        private long memoryPerTenantSlotBytes;
        private boolean admitZeroRequestOnBookedGpu;
        private boolean shareMigInstances;

        private Builder(GranularityRules base, String name) {
            this.admitZeroRequestOnBookedGpu = base.admitZeroRequestOnBookedGpu;
            this.shareMigInstances = base.shareMigInstances;
            this.name = name;
            this.memoryUnitBytes = base.memoryUnitBytes;
            this.minMemoryBytes = base.minMemoryBytes;
            this.computeUnit = base.computeUnit;
            this.maxTenantsPerGpu = base.maxTenantsPerGpu;
            this.memoryPerTenantSlotBytes = base.memoryPerTenantSlotBytes;
        }

        public Builder name(String v) { this.name = v; return this; }
        public Builder memoryUnitBytes(long v) { this.memoryUnitBytes = v; return this; }
        public Builder minMemoryBytes(long v) { this.minMemoryBytes = v; return this; }
        public Builder computeUnit(int v) { this.computeUnit = v; return this; }
        public Builder maxTenantsPerGpu(int v) { this.maxTenantsPerGpu = v; return this; }
        public Builder memoryPerTenantSlotBytes(long v) { this.memoryPerTenantSlotBytes = v; return this; }
        /** Admit compute-request-0 claims on GPUs whose guaranteed compute for their class is fully booked. */
        public Builder admitZeroRequestOnBookedGpu(boolean v) { this.admitZeroRequestOnBookedGpu = v; return this; }
        /** Let several tenants share one MIG instance (by default a MIG instance holds one tenant). */
        public Builder shareMigInstances(boolean v) { this.shareMigInstances = v; return this; }

        public GranularityRules build() {
            return new GranularityRules(name, memoryUnitBytes, minMemoryBytes, computeUnit, maxTenantsPerGpu,
                    memoryPerTenantSlotBytes, admitZeroRequestOnBookedGpu, shareMigInstances);
        }
    }
}
