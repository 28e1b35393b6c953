package io.qgpu.nvml.discovery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import io.qgpu.api.GpuLink;
import io.qgpu.api.TopologyLevel;

/** Assertions on the links discovery builds. */
final class NvLinkAsserts {
    private NvLinkAsserts() {
    }

    /**
     * An NVLink pair with these lanes, through an NVSwitch or not, that keeps the PCIe common ancestor
     * discovery read for the pair ({@code SYS} where NVML gave none).
     */
    static void assertNvLink(int lanes, boolean viaSwitch, NvmlInventory inv, int a, int b, GpuLink actual,
                             String... message) {
        String m = a + "-" + b + " " + String.join(" ", message) + ": " + actual;
        assertInstanceOf(GpuLink.NvLink.class, actual, m);
        assertEquals(lanes, actual.nvLinkLanes(), m);
        assertEquals(viaSwitch, actual.viaNvSwitch(), m);
        assertEquals(inv.pair(a, b).commonAncestor().orElse(TopologyLevel.SYSTEM), actual.pcieLevel(), m);
    }
}
