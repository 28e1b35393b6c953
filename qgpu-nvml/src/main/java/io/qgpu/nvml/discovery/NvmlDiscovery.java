package io.qgpu.nvml.discovery;

import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.Health;
import io.qgpu.api.IsolationPolicy;
import io.qgpu.api.Node;
import io.qgpu.api.Topology;
import io.qgpu.api.Validate;
import io.qgpu.api.spi.GpuDiscovery;
import io.qgpu.nvml.Nvml;
import io.qgpu.nvml.NvmlDevice;
import io.qgpu.nvml.NvmlException;
import io.qgpu.nvml.NvmlMemory;
import io.qgpu.nvml.NvmlNvLink;
import io.qgpu.nvml.NvmlPciInfo;
import io.qgpu.nvml.NvmlReturn;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link GpuDiscovery} over NVML: the local GPUs (UUID, name, memory, index, NUMA node, health) and the
 * link of every pair (NVLink lanes, direct or through NVSwitches, else the PCIe common-ancestor level).
 * {@link #inventory(String)} also returns the NVML facts the node model has no room for.
 *
 * <pre>{@code
 * try (NvmlDiscovery discovery = NvmlDiscovery.builder().build()) {   // opens its own NVML session
 *     Node self = discovery.discover("node-a");
 *     self.topology().link(0, 1).label();                            // "NV18", "PIX", "SYS"...
 * }
 * }</pre>
 *
 * <p>GPUs that NVML lists but that cannot be used (lost, no permission, insufficient power, reset
 * required) are left out of the node and named in {@link NvmlInventory#unreachable()}; a lost GPU is
 * also reported unhealthy to the session's health listeners. Any other NVML failure fails the discovery
 * with its {@link NvmlException}.
 *
 * <p>Thread safety: thread-safe; each call reads NVML afresh.
 */
public final class NvmlDiscovery implements GpuDiscovery {
    private static final Logger LOG = LoggerFactory.getLogger(NvmlDiscovery.class);
    /** Codes that make one GPU unusable without failing the whole discovery. */
    private static final Set<NvmlReturn> SKIPPABLE = EnumSet.of(NvmlReturn.GPU_IS_LOST, NvmlReturn.NO_PERMISSION,
            NvmlReturn.INSUFFICIENT_POWER, NvmlReturn.RESET_REQUIRED, NvmlReturn.IRQ_ISSUE);

    private final Nvml nvml;
    private final boolean ownsSession;
    private final IsolationPolicy isolationPolicy;

    private NvmlDiscovery(Nvml nvml, boolean ownsSession, IsolationPolicy isolationPolicy) {
        this.nvml = nvml;
        this.ownsSession = ownsSession;
        this.isolationPolicy = isolationPolicy;
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
                return build(nodeName, found, driver, version, unreachable);
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

    /** What one GPU says about itself. */
    private record Facts(NvmlDevice device, int index, String name, NvmlMemory memory, int minor, NvmlPciInfo pci,
                         io.qgpu.nvml.NvmlComputeCapability cc, io.qgpu.nvml.NvmlMigMode mig, int numa,
                         List<NvmlNvLink> links) {
    }

    private static Facts read(NvmlDevice d) {
        return new Facts(d, d.index(), d.name(), d.memory(), d.minorNumber(), d.pciInfo(), d.computeCapability(),
                d.migMode(), d.numaNode(), d.nvLinks());
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
            return (NvmlException) super.getCause();
        }
    }

    private NvmlInventory build(String nodeName, List<Facts> found, String driver, String version,
                                List<String> unreachable) {
        int n = found.size();
        int[][] direct = new int[n][n];
        int[] switchLinks = new int[n];
        int[] active = new int[n];
        for (int a = 0; a < n; a++) {
            for (NvmlNvLink link : found.get(a).links) {
                if (!link.active()) {
                    continue;
                }
                active[a]++;
                NvmlPciInfo remote = link.remote().orElseThrow();
                int b = positionOfPci(found, remote);
                if (b >= 0 && b != a) {
                    direct[a][b]++;
                } else {
                    switchLinks[a]++;
                }
            }
        }
        Topology.Builder topology = Topology.builder(n);
        for (int a = 0; a < n; a++) {
            for (int b = a + 1; b < n; b++) {
                topology.link(a, b, LinkRules.link(a, b, direct, switchLinks, (x, y) -> ancestor(found, x, y)));
            }
        }
        List<GpuDevice> gpus = new ArrayList<>(n);
        List<NvmlDeviceInfo> infos = new ArrayList<>(n);
        for (int a = 0; a < n; a++) {
            Facts f = found.get(a);
            Health health = nvml.health(f.device.uuid());
            gpus.add(GpuDevice.builder(f.device.uuid()).index(f.index).model(f.name).memoryBytes(f.memory.total())
                    .numaNode(f.numa).health(health).isolationPolicy(isolationPolicy).build());
            infos.add(new NvmlDeviceInfo(f.index, f.device.uuid(), f.name, f.memory.total(), f.memory.reserved(),
                    f.minor, f.pci.busId(), f.cc, f.mig, f.numa, active[a], switchLinks[a], health));
        }
        Node node = new Node(nodeName, java.util.Map.of(), gpus, topology.build());
        return new NvmlInventory(node, infos, driver, version, unreachable);
    }

    private static int positionOfPci(List<Facts> found, NvmlPciInfo pci) {
        for (int i = 0; i < found.size(); i++) {
            if (found.get(i).pci.sameDevice(pci)) {
                return i;
            }
        }
        return -1;
    }

    private static int ancestor(List<Facts> found, int a, int b) {
        Facts fa = found.get(a);
        Facts fb = found.get(b);
        try {
            return fa.device.commonAncestor(fb.device).nvmlValue();
        } catch (NvmlException e) {
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
        private Nvml session;
        private Path libraryPath;
        private IsolationPolicy isolationPolicy = IsolationPolicy.BEST_EFFORT;

        private Builder() {
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
         * @throws io.qgpu.api.InvalidValueException if both a session and a library path are given
         * @throws io.qgpu.nvml.NvmlLibraryException if an own session's library cannot be loaded
         */
        public NvmlDiscovery build() {
            if (session != null && libraryPath != null) {
                throw new io.qgpu.api.InvalidValueException("discovery.libraryPath", libraryPath,
                        "give either a session or a library path, not both");
            }
            if (session != null) {
                return new NvmlDiscovery(session, false, isolationPolicy);
            }
            Nvml.Builder b = Nvml.builder();
            if (libraryPath != null) {
                b.libraryPath(libraryPath);
            }
            return new NvmlDiscovery(b.open(), true, isolationPolicy);
        }
    }
}
