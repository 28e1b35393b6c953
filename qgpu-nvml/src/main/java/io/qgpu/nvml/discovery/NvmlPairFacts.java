package io.qgpu.nvml.discovery;

import io.qgpu.api.GpuLink;
import io.qgpu.api.TopologyLevel;
import io.qgpu.api.Validate;
import java.util.Optional;

/**
 * What NVML says about one pair of GPUs, raw, and the link discovery made of it.
 *
 * <pre>{@code
 * NvmlPairFacts p = inventory.pair(0, 1);
 * p.commonAncestor();   // Optional[HOSTBRIDGE], empty where NVML does not say (VMs)
 * p.link().label();     // "PHB"
 * }</pre>
 *
 * @param a              position of the first GPU in {@link NvmlInventory#devices()}
 * @param b              position of the second GPU, {@code b > a}
 * @param commonAncestor their PCIe common-ancestor level ({@code nvmlDeviceGetTopologyCommonAncestor}),
 *                       empty when NVML answered {@code NOT_SUPPORTED}
 * @param directNvLinks  active NVLinks between them (GPU remote type, matched by PCI address), the smaller
 *                       count of the two directions
 * @param switchNvLinks  NVLink lanes between them through NVSwitches: the smaller switch-link count of the
 *                       two, 0 unless both have switch links
 * @param link           the link discovery reports: NVLink with {@code direct + switch} lanes, else PCIe at
 *                       the common ancestor, {@code SYS} when that is unknown
 *
 * <p>Thread safety: immutable.
 */
public record NvmlPairFacts(int a, int b, Optional<TopologyLevel> commonAncestor, int directNvLinks, int switchNvLinks,
                            GpuLink link) {

    public NvmlPairFacts {
        Validate.atLeast("pair.a", a, 0);
        Validate.atLeast("pair[" + a + "].b", b, a + 1);
        Validate.notNull("pair[" + a + "," + b + "].commonAncestor", commonAncestor);
        Validate.atLeast("pair[" + a + "," + b + "].directNvLinks", directNvLinks, 0);
        Validate.atLeast("pair[" + a + "," + b + "].switchNvLinks", switchNvLinks, 0);
        Validate.notNull("pair[" + a + "," + b + "].link", link);
    }
}
