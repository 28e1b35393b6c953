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

    /**
     * A link as the file formats write it: the PCIe level ({@code PSB, PIX, PXB, PHB, NODE, SYS}) for a
     * PCIe-only pair; {@code NV<lanes>} for NVLink, optionally followed by {@code /<PCIe level>} (the
     * pair's common PCIe ancestor; SYS when left out) and {@code /NVSWITCH} when the links go through
     * an NVSwitch. Any case.
     *
     * <pre>{@code
     * GpuLink l = GpuLink.parse("NV12/PXB/NVSWITCH");   // NvLink[lanes=12, pcie=PXB, nvSwitch=true]
     * GpuLink.format(l);                                // "NV12/PXB/NVSWITCH"
     * }</pre>
     *
     * @throws InvalidValueException naming the label and how links are written
     */
    static GpuLink parse(String label) {
        return parse("link", label);
    }

    /** {@link #parse(String)}, naming {@code field} in the error. */
    static GpuLink parse(String field, String label) {
        Validate.notNull(field, label);
        String s = label.trim().toUpperCase(java.util.Locale.ROOT);
        if (s.startsWith("NV")) {
            String[] parts = s.split("/", -1);
            int lanes;
            try {
                lanes = Integer.parseInt(parts[0].substring(2));
            } catch (NumberFormatException e) {
                throw new InvalidValueException(field, label, "NVLink is written NV<lanes>, for example NV4");
            }
            TopologyLevel pcie = TopologyLevel.SYSTEM;
            if (parts.length > 1) {
                pcie = TopologyLevel.fromLabel(parts[1]);
                if (pcie == null) {
                    throw new InvalidValueException(field, label,
                            "the PCIe level after NV<lanes>/ must be PSB, PIX, PXB, PHB, NODE or SYS");
                }
            }
            boolean nvSwitch = false;
            if (parts.length > 2) {
                if (parts.length > 3 || !parts[2].equals("NVSWITCH")) {
                    throw new InvalidValueException(field, label, "NVLink is written NV<lanes>[/<PCIe level>[/NVSWITCH]]");
                }
                nvSwitch = true;
            }
            return new NvLink(lanes, pcie, nvSwitch);
        }
        TopologyLevel level = TopologyLevel.fromLabel(s);
        if (level == null) {
            throw new InvalidValueException(field, label, "must be NV<lanes>, PSB, PIX, PXB, PHB, NODE or SYS");
        }
        return new Pcie(level);
    }

    /** The link as {@link #parse(String)} reads it back: {@code PHB}, {@code NV4}, {@code NV12/PXB/NVSWITCH}. */
    static String format(GpuLink l) {
        if (!(l instanceof NvLink nv)) {
            return l.label();
        }
        if (nv.nvSwitch()) {
            return nv.label() + "/" + nv.pcie().label() + "/NVSWITCH";
        }
        return nv.pcie() == TopologyLevel.SYSTEM ? nv.label() : nv.label() + "/" + nv.pcie().label();
    }

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
