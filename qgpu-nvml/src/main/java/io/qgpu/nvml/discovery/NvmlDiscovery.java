package io.qgpu.nvml.discovery;

import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.Health;
import io.qgpu.api.IsolationPolicy;
import io.qgpu.api.Node;
import io.qgpu.api.Topology;
import io.qgpu.api.TopologyLevel;
import io.qgpu.api.Validate;
import io.qgpu.api.spi.GpuDiscovery;
import io.qgpu.nvml.Nvml;
import io.qgpu.nvml.NvmlDevice;
import io.qgpu.nvml.NvmlException;
import io.qgpu.nvml.NvmlAffinityScope;
import io.qgpu.nvml.NvmlComputeCapability;
import io.qgpu.nvml.NvmlMemory;
import io.qgpu.nvml.NvmlMigDevice;
import io.qgpu.nvml.NvmlMigMode;
import io.qgpu.nvml.NvmlNvLink;
import io.qgpu.nvml.NvmlPciInfo;
import io.qgpu.nvml.NvmlReturn;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link GpuDiscovery} over NVML: the local GPUs (UUID, name, memory, index, NUMA node, health) and the
 * link of every pair (NVLink lanes, direct or through NVSwitches, else the PCIe common-ancestor level).
 * {@link #inventory(String)} also returns the NVML facts the node model has no room for: per GPU its own
 * NUMA id, CPU and NUMA affinity, NVLink counts by far end and MIG instances; per pair the common-ancestor
 * level and the NVLink lanes.
 *
 * <p>On real machines: a MIG-enabled GPU whose memory NVML refuses ({@code NO_PERMISSION}, as in a
 * container) is kept, and by default reported as its MIG instances (see
 * {@link Builder#migInstancesAsDevices(boolean)}; every pair with an instance is {@code SYS}). NVLinks count
 * by their remote device type: switch links toward every GPU with switch links, GPU links only toward the
 * visible GPU at their far end; links NVML cannot identify count for no pair. A common-ancestor query NVML
 * does not support gives {@code SYS}. The NUMA node of a GPU is the nearest node of CPU memory
 * ({@code nvmlDeviceGetMemoryAffinity}), not {@code nvmlDeviceGetNumaNodeId}, which x86 does not support.
 *
 * <pre>{@code
 * try (NvmlDiscovery discovery = NvmlDiscovery.builder().build()) {   // opens its own NVML session
 *     Node self = discovery.discover("node-a");
 *     self.topology().link(0, 1).label();                            // "NV18", "PIX", "SYS"...
 * }
 * }</pre>
 *
 * <p>GPUs that NVML lists but that cannot be used (lost, no permission, insufficient power, reset
 * required, an IRQ issue) are left out of the node and named in {@link NvmlInventory#unreachable()}; a lost GPU is
 * also reported unhealthy to the session's health listeners. Any other NVML failure fails the discovery
 * with its {@link NvmlException}.
 *
 * <p>Thread safety: thread-safe; each call reads NVML afresh.
 */
public final class NvmlDiscovery implements GpuDiscovery {
    private static final Logger LOG = LoggerFactory.getLogger(NvmlDiscovery.class);
    /** The link of a pair that involves a MIG instance. */
    private static final GpuLink MIG_LINK = new GpuLink.Pcie(TopologyLevel.SYSTEM);
    /** Codes that make one GPU unusable without failing the whole discovery. */
    private static final Set<NvmlReturn> SKIPPABLE = EnumSet.of(NvmlReturn.GPU_IS_LOST, NvmlReturn.NO_PERMISSION,
            NvmlReturn.INSUFFICIENT_POWER, NvmlReturn.RESET_REQUIRED, NvmlReturn.IRQ_ISSUE);

    private final Nvml nvml;
    private final boolean ownsSession;
    private final IsolationPolicy isolationPolicy;
    private final boolean migInstancesAsDevices;

    private NvmlDiscovery(Nvml nvml, boolean ownsSession, IsolationPolicy isolationPolicy,
                          boolean migInstancesAsDevices) {
        this.nvml = nvml;
        this.ownsSession = ownsSession;
        this.isolationPolicy = isolationPolicy;
        this.migInstancesAsDevices = migInstancesAsDevices;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The NVML session in use. */
    public Nvml session() {
        return nvml;
    }

    @Override
    public Node discover(String nodeName) {
        return inventory(nodeName).node();
    }

    /** The node and the NVML facts of its GPUs. */
    public NvmlInventory inventory(String nodeName) {
        Validate.notBlank("discovery.nodeName", nodeName);
        String driver = nvml.driverVersion();
        String version = nvml.nvmlVersion();
        int count = nvml.deviceCount();
        List<String> unreachable = new ArrayList<>();
        List<Facts> found = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            try {
                found.add(read(nvml.device(i)));
            } catch (NvmlException e) {
                if (!SKIPPABLE.contains(e.result())) {
                    throw e;
                }
                String where = "index " + i;
                String who = e.gpu().filter(g -> g.startsWith("GPU-")).map(g -> g + " (" + where + ")").orElse(where);
                LOG.warn("GPU {} left out of the inventory: {}", who, e.getMessage());
                unreachable.add(who + ": " + e.result().cName() + " from " + e.function());
            }
        }
        // pairs: a lost GPU found while linking is dropped, and the links are worked out again
        while (true) {
            try {
                return build(nodeName, found, count, driver, version, unreachable);
            } catch (LostDuringLinking lost) {
                Facts gone = lost.facts;
                found.remove(gone);
                unreachable.add(gone.device.uuid() + " (index " + gone.index + "): NVML_ERROR_GPU_IS_LOST from "
                        + lost.getCause().function());
            }
        }
    }

    @Override
    public void close() {
        if (ownsSession) {
            nvml.close();
        }
    }

    /** What one MIG instance says about itself. */
    private record MigFacts(NvmlMigDevice mig, String name, long memory) {
    }

    /** What one GPU says about itself ({@code memory} null when NVML refused it). */
    private record Facts(NvmlDevice device, int index, String name, @Nullable NvmlMemory memory, int minor, NvmlPciInfo pci,
                         NvmlComputeCapability cc, NvmlMigMode mig, int gpuNuma, List<Integer> numaAffinity,
                         List<Integer> cpuAffinity, List<NvmlNvLink> links, List<MigFacts> migs) {
    }

    private static Facts read(NvmlDevice d) {
        int index = d.index();
        String name = d.name();
        NvmlMemory memory = null;
        NvmlException refused = null;
        try {
            memory = d.memory();
        } catch (NvmlException e) {
            if (e.result() != NvmlReturn.NO_PERMISSION) {
                throw e;
            }
            refused = e; // a MIG-enabled GPU seen from a container: its instances still answer
        }
        int minor = d.minorNumber();
        NvmlPciInfo pci = d.pciInfo();
        NvmlComputeCapability cc = d.computeCapability();
        NvmlMigMode mig = d.migMode();
        List<MigFacts> migs = new ArrayList<>();
        if (mig.current() == NvmlMigMode.State.ENABLED) {
            for (NvmlMigDevice m : d.migDevices()) {
                migs.add(new MigFacts(m, m.device().name(), m.device().memory().total()));
            }
        }
        if (memory == null && migs.isEmpty()) {
            throw refused;
        }
        return new Facts(d, index, name, memory, minor, pci, cc, mig, d.numaNode(),
                orUnknown(() -> d.memoryAffinity(NvmlAffinityScope.NODE)),
                orUnknown(() -> d.cpuAffinity(NvmlAffinityScope.NODE)), d.nvLinks(), List.copyOf(migs));
    }

    /** An affinity NVML refuses to give ({@code NO_PERMISSION}) is unknown, like one it does not support. */
    private static List<Integer> orUnknown(Supplier<List<Integer>> query) {
        try {
            return query.get();
        } catch (NvmlException e) {
            if (e.result() != NvmlReturn.NO_PERMISSION) {
                throw e;
            }
            return List.of();
        }
    }

    private static final class LostDuringLinking extends RuntimeException {
        private static final long serialVersionUID = 1L;
        private final transient Facts facts;

        LostDuringLinking(Facts facts, NvmlException cause) {
            super(cause.getMessage(), cause, false, false);
            this.facts = facts;
        }

        @Override
        public synchronized NvmlException getCause() {
            // always constructed with its cause
            return (NvmlException) Objects.requireNonNull(super.getCause());
        }
    }

    private NvmlInventory build(String nodeName, List<Facts> found, int deviceCount, String driver, String version,
                                List<String> unreachable) {
        int n = found.size();
        int[][] direct = new int[n][n];
        int[] switchLinks = new int[n];
        int[] unknownLinks = new int[n];
        int[] active = new int[n];
        for (int a = 0; a < n; a++) {
            for (NvmlNvLink link : found.get(a).links) {
                if (!link.active()) {
                    continue;
                }
                active[a]++;
                switch (link.remoteType()) {
                    case SWITCH -> switchLinks[a]++;
                    case GPU -> {
                        int b = positionOfPci(found, link.remote().orElseThrow());
                        if (b >= 0 && b != a) {
                            direct[a][b]++;
                        } // else a GPU this process does not see: no pair gains from it
                    }
                    default -> unknownLinks[a]++;
                }
            }
        }
        int[][] level = new int[n][n];
        List<NvmlPairFacts> pairs = new ArrayList<>();
        for (int a = 0; a < n; a++) {
            for (int b = a + 1; b < n; b++) {
                Optional<TopologyLevel> ancestor = ancestor(found, a, b);
                level[a][b] = ancestor.map(TopologyLevel::nvmlValue).orElse(LinkRules.UNKNOWN_LEVEL);
                GpuLink link = LinkRules.link(a, b, direct, switchLinks, (x, y) -> level[x][y]);
                int viaSwitch = switchLinks[a] > 0 && switchLinks[b] > 0 ? Math.min(switchLinks[a], switchLinks[b]) : 0;
                pairs.add(new NvmlPairFacts(a, b, ancestor, Math.min(direct[a][b], direct[b][a]), viaSwitch, link));
            }
        }
        List<NvmlDeviceInfo> infos = new ArrayList<>(n);
        List<GpuDevice> gpus = new ArrayList<>();
        List<Integer> physical = new ArrayList<>(); // per node device: its GPU's position, -1 for a MIG instance
        int nextIndex = deviceCount;
        for (int a = 0; a < n; a++) {
            Facts f = found.get(a);
            Health health = nvml.health(f.device.uuid());
            int numa = f.numaAffinity.isEmpty() ? -1 : f.numaAffinity.get(0);
            boolean split = migInstancesAsDevices && !f.migs.isEmpty();
            List<MigInstance> instances = new ArrayList<>();
            for (MigFacts m : f.migs) {
                int nodeIndex = split ? nextIndex++ : -1;
                instances.add(new MigInstance(m.mig.device().uuid(), m.name, f.device.uuid(), f.index, m.mig.slot(),
                        m.mig.gpuInstanceId(), m.mig.computeInstanceId(), m.memory, nodeIndex));
                if (split) {
                    gpus.add(GpuDevice.builder(m.mig.device().uuid()).index(nodeIndex).model(m.name).memoryBytes(m.memory)
                            .numaNode(numa).health(health).isolationPolicy(isolationPolicy).build());
                    physical.add(-1);
                }
            }
            if (!split) {
                long memory = f.memory != null ? f.memory.total() : f.migs.stream().mapToLong(MigFacts::memory).sum();
                gpus.add(GpuDevice.builder(f.device.uuid()).index(f.index).model(f.name).memoryBytes(memory)
                        .numaNode(numa).health(health).isolationPolicy(isolationPolicy).build());
                physical.add(a);
            }
            infos.add(new NvmlDeviceInfo(f.index, f.device.uuid(), f.name, f.memory == null ? -1 : f.memory.total(),
                    f.memory == null ? -1 : f.memory.reserved(), f.minor, f.pci.busId(), f.cc, f.mig, f.gpuNuma,
                    f.numaAffinity, f.cpuAffinity, active[a], switchLinks[a], unknownLinks[a], instances, health));
        }
        Topology.Builder topology = Topology.builder(gpus.size());
        for (int x = 0; x < gpus.size(); x++) {
            for (int y = x + 1; y < gpus.size(); y++) {
                int a = physical.get(x);
                int b = physical.get(y);
                // MIG instances have no peer-to-peer path (CUDA does not support P2P under MIG)
                GpuLink link = a < 0 || b < 0 ? MIG_LINK : pairs.get(pairSlot(n, a, b)).link();
                topology.link(x, y, link);
            }
        }
        Node node = new Node(nodeName, Map.of(), gpus, topology.build());
        return new NvmlInventory(node, infos, pairs, driver, version, unreachable);
    }

    private static int pairSlot(int n, int a, int b) {
        return a * (2 * n - a - 1) / 2 + (b - a - 1);
    }

    private static int positionOfPci(List<Facts> found, NvmlPciInfo pci) {
        for (int i = 0; i < found.size(); i++) {
            if (found.get(i).pci.sameDevice(pci)) {
                return i;
            }
        }
        return -1;
    }

    /** The common-ancestor level of a pair; empty where NVML does not support the query (VMs). */
    private static Optional<TopologyLevel> ancestor(List<Facts> found, int a, int b) {
        Facts fa = found.get(a);
        Facts fb = found.get(b);
        try {
            return Optional.of(fa.device.commonAncestor(fb.device));
        } catch (NvmlException e) {
            if (e.result() == NvmlReturn.NOT_SUPPORTED) {
                return Optional.empty();
            }
            if (e.result() != NvmlReturn.GPU_IS_LOST) {
                throw e;
            }
            // the code does not say which GPU is lost: ask each (the probe marks it unhealthy)
            for (Facts f : List.of(fa, fb)) {
                try {
                    f.device.index();
                } catch (NvmlException probe) {
                    if (probe.result() == NvmlReturn.GPU_IS_LOST) {
                        throw new LostDuringLinking(f, probe);
                    }
                    throw probe;
                }
            }
            throw e;
        }
    }

    /**
     * Options for a discovery.
     *
     * <pre>{@code
     * NvmlDiscovery d = NvmlDiscovery.builder().session(nvml).isolationPolicy(IsolationPolicy.BURST_SHARE).build();
     * }</pre>
     *
     * <p>Thread safety: not thread-safe; use from one thread.
     */
    public static final class Builder {
        private @Nullable Nvml session;
        private @Nullable Path libraryPath;
        private IsolationPolicy isolationPolicy = IsolationPolicy.BEST_EFFORT;
        private boolean migInstancesAsDevices = true;

        private Builder() {
        }

        /**
         * Whether a MIG-enabled GPU is reported in the node as one device per MIG instance (the default:
         * true), each under its {@code MIG-...} UUID with its own memory, so that placement treats an instance
         * as a whole device; or as the GPU itself (false), with the instances only in
         * {@link NvmlDeviceInfo#migInstances()}.
         */
        public Builder migInstancesAsDevices(boolean asDevices) {
            this.migInstancesAsDevices = asDevices;
            return this;
        }

        /** Use this open session (the discovery does not close it). */
        public Builder session(Nvml session) {
            this.session = Validate.notNull("discovery.session", session);
            return this;
        }

        /** Open an own session on this library (closed by {@link NvmlDiscovery#close()}). */
        public Builder libraryPath(Path path) {
            this.libraryPath = Validate.notNull("discovery.libraryPath", path);
            return this;
        }

        /** The isolation policy the discovered GPUs get (default best-effort). */
        public Builder isolationPolicy(IsolationPolicy policy) {
            this.isolationPolicy = Validate.notNull("discovery.isolationPolicy", policy);
            return this;
        }

        /**
         * Builds the discovery, opening its own session unless one was given.
         *
         * @throws io.qgpu.api.InvalidValueException if both a session and a library path are given
         * @throws io.qgpu.nvml.NvmlLibraryException if an own session's library cannot be loaded
         */
        public NvmlDiscovery build() {
            if (session != null && libraryPath != null) {
                throw new io.qgpu.api.InvalidValueException("discovery.libraryPath", libraryPath,
                        "give either a session or a library path, not both");
            }
            if (session != null) {
                return new NvmlDiscovery(session, false, isolationPolicy, migInstancesAsDevices);
            }
            Nvml.Builder b = Nvml.builder();
            if (libraryPath != null) {
                b.libraryPath(libraryPath);
            }
            return new NvmlDiscovery(b.open(), true, isolationPolicy, migInstancesAsDevices);
        }
    }
}
