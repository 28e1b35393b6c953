package io.qgpu.api;

/**
 * How two GPUs of one node are connected, at every level: the NVLink lanes between them (if any),
 * whether those NVLinks go through an NVSwitch, and the PCIe common ancestor of the pair (which
 * still matters with NVLink: host-staged copies, GPUDirect to a NIC, and the tie-break between
 * pairs of equal NVLink bandwidth).
 *
 * <p>{@link #quality()} orders links from worst to best by bandwidth class: every NVLink beats every
 * PCIe-only path; more lanes beat fewer; a closer PCIe ancestor beats a farther one. It does not
 * look at the PCIe level under an NVLink; placement uses {@link #pcieLevel()} separately as the
 * tie-break between NVLink pairs of equal lanes.
 *
 * <pre>{@code
 * GpuLink a = new GpuLink.NvLink(4);                                       // PCIe level unknown: SYSTEM
 * GpuLink b = new GpuLink.NvLink(12, TopologyLevel.MULTIPLE, true);       // DGX-A100 pair on one PCIe switch
 * GpuLink c = new GpuLink.Pcie(TopologyLevel.SYSTEM);
 * assert a.quality() > c.quality();
 * b.pcieLevel();     // MULTIPLE
 * b.viaNvSwitch();   // true
 * }</pre>
 */
public sealed interface GpuLink {

    /**
     * Link quality: {@code 100 + lanes} for NVLink, {@code 60 - level/10*10} style for PCIe, i.e.
     * INTERNAL 60, SINGLE 50, MULTIPLE 40, HOSTBRIDGE 30, NODE 20, SYSTEM 10.
     */
    int quality();

    /** Short label as {@code nvidia-smi topo -m} prints it: {@code NV4}, {@code PIX}, {@code SYS}... */
    String label();

    /** NVLink lanes between the pair; 0 when they talk through PCIe only. */
    int nvLinkLanes();

    /** The PCIe common-ancestor level of the pair ({@link TopologyLevel#SYSTEM} when not known). */
    TopologyLevel pcieLevel();

    /** Whether the pair's NVLinks go through an NVSwitch (false for PCIe-only pairs). */
    boolean viaNvSwitch();

    /**
     * NVLink between the pair with {@code lanes} active links (NVSwitch machines report all pairs),
     * the pair's PCIe common ancestor {@code pcie}, and whether the links go through an NVSwitch.
     */
    record NvLink(int lanes, TopologyLevel pcie, boolean nvSwitch) implements GpuLink {
        public NvLink {
            Validate.between("link.lanes", lanes, 1, 64);
            Validate.notNull("link.pcie", pcie);
        }

        /** NVLink with the PCIe level not known ({@link TopologyLevel#SYSTEM}) and no NVSwitch. */
        public NvLink(int lanes) {
            this(lanes, TopologyLevel.SYSTEM, false);
        }

        @Override
        public int quality() {
            return 100 + lanes;
        }

        @Override
        public String label() {
            return "NV" + lanes;
        }

        @Override
        public int nvLinkLanes() {
            return lanes;
        }

        @Override
        public TopologyLevel pcieLevel() {
            return pcie;
        }

        @Override
        public boolean viaNvSwitch() {
            return nvSwitch;
        }
    }

    /** No NVLink; the pair talks through PCIe at this common-ancestor level. */
    record Pcie(TopologyLevel level) implements GpuLink {
        public Pcie {
            Validate.notNull("link.level", level);
        }

        @Override
        public int quality() {
            return 60 - level.nvmlValue();
        }

        @Override
        public String label() {
            return level.label();
        }

        @Override
        public int nvLinkLanes() {
            return 0;
        }

        @Override
        public TopologyLevel pcieLevel() {
            return level;
        }

        @Override
        public boolean viaNvSwitch() {
            return false;
        }
    }
}
