package io.qgpu.api;

/**
 * How two GPUs of one node are connected: by NVLink with a number of lanes, or only through PCIe
 * at some common-ancestor level.
 *
 * <p>{@link #quality()} orders links from worst to best and is what topology scoring uses: every
 * NVLink beats every PCIe path; more lanes beat fewer; a closer PCIe ancestor beats a farther one.
 *
 * <pre>{@code
 * GpuLink a = new GpuLink.NvLink(4);
 * GpuLink b = new GpuLink.Pcie(TopologyLevel.SYSTEM);
 * assert a.quality() > b.quality();
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

    /** NVLink between the pair with {@code lanes} active links (NVSwitch machines report all pairs). */
    record NvLink(int lanes) implements GpuLink {
        public NvLink {
            Validate.between("link.lanes", lanes, 1, 64);
        }

        @Override
        public int quality() {
            return 100 + lanes;
        }

        @Override
        public String label() {
            return "NV" + lanes;
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
            return switch (level) {
                case INTERNAL -> "PSB";
                case SINGLE -> "PIX";
                case MULTIPLE -> "PXB";
                case HOSTBRIDGE -> "PHB";
                case NODE -> "NODE";
                case SYSTEM -> "SYS";
            };
        }
    }
}
