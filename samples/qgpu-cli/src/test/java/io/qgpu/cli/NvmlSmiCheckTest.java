package io.qgpu.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The comparison the real-GPU script runs, fed with the inventory of the fake t4x4 machine and
 * nvidia-smi output written the way nvidia-smi writes it (DOCTYPE, units, tabs).
 */
class NvmlSmiCheckTest {
    private static final String[] BUS = {"00000000:3B:00.0", "00000000:5E:00.0", "00000000:86:00.0", "00000000:AF:00.0"};

    static String inventoryJson() {
        InventoryCommandTest.Result r = InventoryCommandTest.run("inventory", "--json", "--nvml-lib",
                InventoryCommandTest.fake().toString(), "--machine", "t4x4");
        assertEquals(0, r.code(), r.err());
        return r.out();
    }

    static String smiXml(List<String> uuids, String nameOfGpu2, long mibOfGpu3) {
        StringBuilder sb = new StringBuilder("""
                <?xml version="1.0" ?>
                <!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
                <nvidia_smi_log>
                \t<timestamp>Mon Jan  6 10:00:00 2025</timestamp>
                \t<driver_version>535.183.01</driver_version>
                \t<attached_gpus>4</attached_gpus>
                """);
        for (int i = 0; i < 4; i++) {
            sb.append("\t<gpu id=\"").append(BUS[i]).append("\">\n")
                    .append("\t\t<product_name>").append(i == 2 ? nameOfGpu2 : "Tesla T4").append("</product_name>\n")
                    .append("\t\t<mig_mode>\n\t\t\t<current_mig>N/A</current_mig>\n\t\t\t<pending_mig>N/A</pending_mig>\n\t\t</mig_mode>\n")
                    .append("\t\t<uuid>").append(uuids.get(i)).append("</uuid>\n")
                    .append("\t\t<minor_number>").append(i).append("</minor_number>\n")
                    .append("\t\t<pci>\n\t\t\t<pci_bus>").append(BUS[i], 9, 11).append("</pci_bus>\n")
                    .append("\t\t\t<pci_bus_id>").append(BUS[i]).append("</pci_bus_id>\n\t\t</pci>\n")
                    .append("\t\t<fb_memory_usage>\n\t\t\t<total>").append(i == 3 ? mibOfGpu3 : 15872)
                    .append(" MiB</total>\n\t\t\t<reserved>512 MiB</reserved>\n\t\t\t<used>0 MiB</used>\n")
                    .append("\t\t</fb_memory_usage>\n\t</gpu>\n");
        }
        return sb.append("</nvidia_smi_log>\n").toString();
    }

    static final String TOPO = "\t\u001B[4mGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\u001B[0m\n"
            + "GPU0\t X \tPHB\tSYS\tSYS\t0-15\t0\t\tN/A\n"
            + "GPU1\tPHB\t X \tSYS\tSYS\t0-15\t0\t\tN/A\n"
            + "GPU2\tSYS\tSYS\t X \tPHB\t16-31\t1\t\tN/A\n"
            + "GPU3\tSYS\tSYS\tPHB\t X \t16-31\t1\t\tN/A\n"
            + "\nLegend:\n\n  X    = Self\n  SYS  = Connection traversing PCIe as well as the SMP interconnect\n";

    static List<String> uuids(String json) throws Exception {
        JsonNode gpus = new ObjectMapper().readTree(json).path("gpus");
        return List.of(gpus.get(0).path("uuid").asText(), gpus.get(1).path("uuid").asText(),
                gpus.get(2).path("uuid").asText(), gpus.get(3).path("uuid").asText());
    }

    static String[] check(String json, String xml, String topo) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int code = NvmlSmiCheck.check(json, xml, topo, new PrintStream(out, true, StandardCharsets.UTF_8));
        return new String[] {Integer.toString(code), out.toString(StandardCharsets.UTF_8)};
    }

    @Test
    void matchingOutputPasses() throws Exception {
        String json = inventoryJson();
        String[] r = check(json, smiXml(uuids(json), "Tesla T4", 15872), TOPO);
        assertEquals("0", r[0], r[1]);
        assertTrue(r[1].contains("ALL"), r[1]);
        assertTrue(r[1].contains("ok        link GPU2-GPU3: nvidia-smi PHB, inventory PHB"), r[1]);
    }

    @Test
    void mismatchesAreFound() throws Exception {
        String json = inventoryJson();
        List<String> uuids = uuids(json);
        String[] name = check(json, smiXml(uuids, "Tesla V100", 15872), TOPO);
        assertEquals("1", name[0]);
        assertTrue(name[1].contains("MISMATCH") && name[1].contains("Tesla V100"), name[1]);
        String[] mem = check(json, smiXml(uuids, "Tesla T4", 15000), null);
        assertEquals("1", mem[0]);
        assertTrue(mem[1].contains("MISMATCH  GPU 3"), mem[1]);
        String[] topo = check(json, smiXml(uuids, "Tesla T4", 16384), TOPO.replace("GPU0\t X \tPHB", "GPU0\t X \tNV2"));
        assertEquals("1", topo[0]);
        assertTrue(topo[1].contains("MISMATCH  link GPU0-GPU1: nvidia-smi NV2, inventory PHB"), topo[1]);
        String[] missing = check(json, smiXml(List.of("GPU-other", uuids.get(1), uuids.get(2), uuids.get(3)),
                "Tesla T4", 15872), TOPO);
        assertEquals("1", missing[0]);
        assertTrue(missing[1].contains("GPU-other (nvidia-smi position 0) is missing"), missing[1]);
    }

    @Test
    void affinityAndProcessMismatchesAreFound() throws Exception {
        String json = inventoryJson();
        List<String> uuids = uuids(json);
        String xml = smiXml(uuids, "Tesla T4", 15872);
        String[] cpu = check(json, xml, TOPO.replace("\t0-15\t0\t", "\t0-7\t0\t"));
        assertEquals("1", cpu[0]);
        assertTrue(cpu[1].contains("MISMATCH  GPU0 CPU affinity: nvidia-smi 0-7, inventory 0-15"), cpu[1]);
        String[] numa = check(json, xml, TOPO.replace("\t16-31\t1\t", "\t16-31\t3\t"));
        assertTrue(numa[1].contains("MISMATCH  GPU2 NUMA affinity: nvidia-smi 3, inventory 1"), numa[1]);
        String withProcess = xml.replaceFirst("</fb_memory_usage>",
                "</fb_memory_usage>\n\t\t<processes>\n\t\t\t<process_info><pid>4242</pid></process_info>\n\t\t</processes>");
        String[] procs = check(json, withProcess, TOPO);
        assertEquals("1", procs[0]);
        assertTrue(procs[1].contains("processes (pids): nvidia-smi [4242], inventory []"), procs[1]);
    }

    @Test
    void unreadableInputIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> NvmlSmiCheck.parseSmi("not xml"));
        assertThrows(IllegalArgumentException.class, () -> NvmlSmiCheck.parseTopo("nothing here"));
        assertEquals("00000000:3b:00.0", NvmlSmiCheck.normalizeBusId("0000:3B:00.0"));
    }
}
