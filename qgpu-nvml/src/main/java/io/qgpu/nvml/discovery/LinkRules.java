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
 *   <li>NVSwitch: active links that end on something other than a GPU of the machine end on a switch;
 *       two GPUs that both have such links reach each other through the switch fabric with
 *       {@code min(switchLinks[a], switchLinks[b])} lanes (an 18-link H100 pair is NV18).</li>
 *   <li>Both add up. A pair with no lanes is linked through PCIe at its common-ancestor level.</li>
 * </ul>
 *
 * <p>Thread safety: stateless.
 */
final class LinkRules {
    private LinkRules() {
    }

    /**
     * @param direct      {@code direct[a][b]}: active links of GPU a whose remote is GPU b
     * @param switchLinks active links of each GPU that end on a non-GPU remote
     * @param ancestor    the PCIe common-ancestor level of a pair, as an NVML value (called only for pairs
     *                    without NVLink)
     */
    static GpuLink link(int a, int b, int[][] direct, int[] switchLinks, IntBinaryOperator ancestor) {
        int lanes = Math.min(direct[a][b], direct[b][a]);
        if (switchLinks[a] > 0 && switchLinks[b] > 0) {
            lanes += Math.min(switchLinks[a], switchLinks[b]);
        }
        if (lanes > 0) {
            return new GpuLink.NvLink(lanes);
        }
        return new GpuLink.Pcie(TopologyLevel.fromNvml(ancestor.applyAsInt(a, b)));
    }
}
