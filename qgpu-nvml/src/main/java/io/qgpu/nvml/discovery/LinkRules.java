package io.qgpu.nvml.discovery;

import io.qgpu.api.GpuLink;
import io.qgpu.api.TopologyLevel;
import java.util.function.IntBinaryOperator;

/**
 * The rules that turn per-GPU NVLink counts into the link of each pair.
 *
 * <ul>
 *   <li>Direct NVLink: the lanes of a pair are the active links of {@code a} whose remote is {@code b}
 *       (the smaller of the two directions, should they ever disagree).</li>
 *   <li>NVSwitch: active links whose remote device type is a switch; two GPUs that both have such links
 *       reach each other through the switch fabric with {@code min(switchLinks[a], switchLinks[b])} lanes
 *       (an 18-link H100 pair is NV18). Links to a GPU this process does not see, and links whose remote
 *       side NVML cannot identify, count for no pair (the caller leaves them out of both arrays).</li>
 *   <li>Both add up. A pair with no lanes is linked through PCIe at its common-ancestor level, or at
 *       {@code SYS} when that level is unknown ({@link #UNKNOWN_LEVEL}: NVML answered
 *       {@code NOT_SUPPORTED}, as in some VMs).</li>
 *   <li>An NVLink pair keeps its PCIe common-ancestor level too (placement breaks ties between pairs
 *       of equal NVLink bandwidth with it; {@code SYS} when unknown), and whether its lanes go
 *       through an NVSwitch (any switch lanes counted for it).</li>
 * </ul>
 *
 * <p>Thread safety: stateless.
 */
final class LinkRules {
    /** What {@code ancestor} returns for a pair whose common-ancestor level NVML does not give. */
    static final int UNKNOWN_LEVEL = -1;

    private LinkRules() {
    }

    /**
     * @param direct      {@code direct[a][b]}: active links of GPU a whose remote is GPU b
     * @param switchLinks active links of each GPU whose remote is an NVSwitch
     * @param ancestor    the PCIe common-ancestor level of a pair, as an NVML value, or {@link #UNKNOWN_LEVEL}
     */
    static GpuLink link(int a, int b, int[][] direct, int[] switchLinks, IntBinaryOperator ancestor) {
        int lanes = Math.min(direct[a][b], direct[b][a]);
        int viaSwitch = switchLinks[a] > 0 && switchLinks[b] > 0 ? Math.min(switchLinks[a], switchLinks[b]) : 0;
        int level = ancestor.applyAsInt(a, b);
        TopologyLevel pcie = level == UNKNOWN_LEVEL ? TopologyLevel.SYSTEM : TopologyLevel.fromNvml(level);
        if (lanes + viaSwitch > 0) {
            return new GpuLink.NvLink(lanes + viaSwitch, pcie, viaSwitch > 0);
        }
        return new GpuLink.Pcie(pcie);
    }
}
