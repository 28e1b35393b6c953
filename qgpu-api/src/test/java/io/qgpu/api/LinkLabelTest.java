package io.qgpu.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Issue 30 item 8: the labels the file formats use parse and print through the public API. */
class LinkLabelTest {

    @Test
    void topologyLevelsParseAndPrintTheirLabels() {
        assertEquals(TopologyLevel.HOSTBRIDGE, TopologyLevel.parse("PHB"));
        assertEquals(TopologyLevel.SINGLE, TopologyLevel.parse("pix"));
        assertEquals(TopologyLevel.MULTIPLE, TopologyLevel.parse("PXB"));
        assertEquals(TopologyLevel.SYSTEM, TopologyLevel.parse("SYSTEM"), "the enum's own name is accepted too");
        for (TopologyLevel l : TopologyLevel.values()) {
            assertEquals(l.label(), l.toString());
            assertEquals(l, TopologyLevel.parse(l.toString()));
        }
        InvalidValueException e = assertThrows(InvalidValueException.class, () -> TopologyLevel.parse("PCI"));
        assertEquals("topologyLevel = \"PCI\": must be PSB, PIX, PXB, PHB, NODE or SYS", e.getMessage());
    }

    @Test
    void linkLabelsParseAndFormatBack() {
        GpuLink l = GpuLink.parse("NV12/PXB/NVSWITCH");
        assertEquals(new GpuLink.NvLink(12, TopologyLevel.MULTIPLE, true), l);
        assertEquals("NV12/PXB/NVSWITCH", GpuLink.format(l));
        assertEquals(new GpuLink.NvLink(4), GpuLink.parse("nv4"));
        assertEquals(new GpuLink.NvLink(2, TopologyLevel.HOSTBRIDGE, false), GpuLink.parse("NV2/PHB"));
        assertEquals(new GpuLink.Pcie(TopologyLevel.SINGLE), GpuLink.parse("PIX"));
        for (String s : new String[] {"PSB", "PIX", "PXB", "PHB", "NODE", "SYS", "NV4", "NV8/PIX", "NV18/SYS/NVSWITCH"}) {
            assertEquals(s, GpuLink.format(GpuLink.parse(s)));
        }
        InvalidValueException e = assertThrows(InvalidValueException.class, () -> GpuLink.parse("NV12/PXB/NVLINK"));
        assertTrue(e.getMessage().contains("NV<lanes>[/<PCIe level>[/NVSWITCH]]"), e.getMessage());
        assertThrows(InvalidValueException.class, () -> GpuLink.parse("fast"));
    }
}
