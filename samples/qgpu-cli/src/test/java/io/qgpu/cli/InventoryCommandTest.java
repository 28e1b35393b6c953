package io.qgpu.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@code qgpu inventory} on the fake libnvidia-ml the build compiles into target/fake-nvml. */
class InventoryCommandTest {

    static Path fake() {
        Path p = Path.of(System.getProperty("qgpu.fakeNvml.dir"), "libnvidia-ml.so.1");
        assertTrue(Files.isRegularFile(p), p + " was not built");
        return p;
    }

    record Result(int code, String out, String err) {
    }

    static Result run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = Main.run(List.of(args), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Result(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    static List<String> matrix(String text) {
        List<String> rows = new ArrayList<>();
        for (String line : text.split("\n")) {
            if (line.matches("GPU\\d+ .*") && !line.contains("GPU-")) {
                rows.add(line.trim().replaceAll("\\s+", " "));
            }
        }
        return rows;
    }

    @Test
    void t4x4PrintsPcieMatrix() {
        Result r = run("inventory", "--nvml-lib", fake().toString(), "--machine", "t4x4", "--node", "t4-box");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains("node t4-box"), r.out());
        assertTrue(r.out().contains("Tesla T4"), r.out());
        assertTrue(r.out().contains("16.0 GiB"), r.out());
        assertTrue(r.out().contains("00000000:3B:00.0"), r.out());
        assertEquals(List.of(
                "GPU0 X PHB SYS SYS 0-15 0 N/A",
                "GPU1 PHB X SYS SYS 0-15 0 N/A",
                "GPU2 SYS SYS X PHB 16-31 1 N/A",
                "GPU3 SYS SYS PHB X 16-31 1 N/A"), matrix(r.out()));
        assertTrue(r.out().contains("CPU Affinity    NUMA Affinity   GPU NUMA ID"), r.out());
        assertTrue(r.out().contains("Legend:"));
    }

    @Test
    void aNodeNameKubernetesWouldNotTakeIsRefused() {
        Result r = run("inventory", "--nvml-lib", fake().toString(), "--machine", "t4x4", "--node", "Node_A");
        assertEquals(2, r.code(), r.out());
        assertTrue(r.err().contains("--node Node_A: not a Kubernetes node name"), r.err());
        assertTrue(r.err().lines().findFirst().orElseThrow().endsWith("'-' and '.')"), "one line, then the usage: " + r.err());
    }

    @Test
    void aLibraryThatIsNotNvmlIsNamedByItsFlag() throws Exception {
        Path notNvml = Files.createTempFile("not-nvml", ".so.1");
        try {
            Result r = run("inventory", "--nvml-lib", notNvml.toString(), "--machine", "t4x4");
            assertEquals(2, r.code(), r.out());
            assertTrue(r.err().contains("--nvml-lib " + notNvml + ": cannot be loaded as NVML"), r.err());
            String first = r.err().lines().findFirst().orElseThrow();
            assertTrue(!first.contains("qgpu.nvml.library"), "the flag, not the binding's system property: " + first);
        } finally {
            Files.deleteIfExists(notNvml);
        }
    }

    @Test
    void dgxH100IsNv18Everywhere() {
        Result r = run("inventory", "--nvml-lib", fake().toString(), "--machine", "dgx-h100");
        assertEquals(0, r.code(), r.err());
        List<String> rows = matrix(r.out());
        assertEquals(8, rows.size());
        assertEquals("GPU0 X NV18 NV18 NV18 NV18 NV18 NV18 NV18 0-15 0 0", rows.get(0));
        assertEquals("GPU7 NV18 NV18 NV18 NV18 NV18 NV18 NV18 X 16-31 1 1", rows.get(7));
    }

    @Test
    void jsonHasDevicesMatrixAndLinks() throws Exception {
        Result r = run("inventory", "--json", "--nvml-lib", fake().toString(), "--machine", "a100-bridged", "--node", "n1");
        assertEquals(0, r.code(), r.err());
        JsonNode root = new ObjectMapper().readTree(r.out());
        assertEquals("n1", root.path("node").asText());
        assertEquals("570.86.15", root.path("driverVersion").asText());
        JsonNode gpus = root.path("gpus");
        assertEquals(4, gpus.size());
        JsonNode g0 = gpus.get(0);
        assertEquals("NVIDIA A100 80GB PCIe", g0.path("name").asText());
        assertEquals(80L << 30, g0.path("memoryBytes").asLong());
        assertEquals(81920, g0.path("memoryMiB").asLong());
        assertEquals("8.0", g0.path("computeCapability").asText());
        assertEquals("DISABLED", g0.path("migMode").path("current").asText());
        assertEquals(0, g0.path("numaNode").asInt());
        assertEquals("00000000:17:00.0", g0.path("pciBusId").asText());
        assertEquals("HEALTHY", g0.path("health").asText());
        assertTrue(g0.path("uuid").asText().startsWith("GPU-"));
        JsonNode m = root.path("topology");
        assertEquals("X", m.get(0).get(0).asText());
        assertEquals("NV12", m.get(0).get(1).asText());
        assertEquals("NV12", m.get(3).get(2).asText());
        assertEquals("SYS", m.get(1).get(2).asText());
        JsonNode first = root.path("links").get(0);
        assertEquals("nvlink", first.path("type").asText());
        assertEquals(12, first.path("lanes").asInt());
        JsonNode pcie = root.path("links").get(1);
        assertEquals("pcie", pcie.path("type").asText());
        assertEquals("SYSTEM", pcie.path("level").asText());
        assertEquals(6, root.path("links").size());
        assertEquals(0, root.path("unreachable").size());
    }

    @Test
    void x86NumaShowsCpuAndNumaAffinityAsNvidiaSmiDoes() {
        Result r = run("inventory", "--nvml-lib", fake().toString(), "--machine", "x86-numa");
        assertEquals(0, r.code(), r.err());
        assertEquals(List.of(
                "GPU0 X PIX SYS SYS 0-23,48-71 0 N/A",
                "GPU1 PIX X SYS SYS 0-23,48-71 0 N/A",
                "GPU2 SYS SYS X NODE 24-47,72-95 1 N/A",
                "GPU3 SYS SYS NODE X 24-47,72-95 1 N/A"), matrix(r.out()));
    }

    @Test
    void a100MigListsTheInstancesAsDevices() throws Exception {
        Result r = run("inventory", "--nvml-lib", fake().toString(), "--machine", "a100-mig");
        assertEquals(0, r.code(), r.err());
        assertEquals(List.of("GPU0 X NV12 0-15 0 N/A", "GPU1 NV12 X 0-15 0 N/A"), matrix(r.out()));
        List<String> migRows = r.out().lines().filter(l -> l.matches("\\d/\\d .*")).toList();
        assertEquals(5, migRows.size(), r.out());
        assertTrue(migRows.get(0).matches("0/0 +MIG-\\S+ +NVIDIA A100-SXM4-80GB MIG 3g\\.40gb +39\\.3 GiB +2 +0 +2"),
                migRows.get(0));
        assertTrue(r.out().contains("N/A"), "the parents' memory is refused in a container");
        JsonNode root = new ObjectMapper().readTree(run("inventory", "--json", "--nvml-lib", fake().toString(),
                "--machine", "a100-mig").out());
        assertEquals(-1, root.path("gpus").get(0).path("memoryMiB").asInt());
        assertEquals(4, root.path("gpus").get(0).path("migInstances").size());
        assertEquals(5, root.path("devices").size());
        assertTrue(root.path("devices").get(4).path("migInstance").asBoolean());
        assertEquals(0, root.path("gpus").get(0).path("processes").size());
    }

    @Test
    void h100VmShowsSysAndCountsUnidentifiedLinks() throws Exception {
        Result r = run("inventory", "--nvml-lib", fake().toString(), "--machine", "h100-vm");
        assertEquals(0, r.code(), r.err());
        assertEquals("GPU0 X SYS SYS SYS N/A N/A N/A", matrix(r.out()).get(0));
        assertTrue(r.out().contains("72 active NVLinks lead to a remote side NVML cannot identify"), r.out());
        JsonNode root = new ObjectMapper().readTree(run("inventory", "--json", "--nvml-lib", fake().toString(),
                "--machine", "h100-vm").out());
        assertEquals(18, root.path("gpus").get(0).path("unknownNvLinks").asInt());
        assertTrue(root.path("links").get(0).path("commonAncestor").isNull());
    }

    @Test
    void badOptionsAreUsageErrors() {
        Result missing = run("inventory", "--nvml-lib", "/nonexistent/libnvidia-ml.so.1");
        assertEquals(2, missing.code());
        assertTrue(missing.err().contains("no such file"), missing.err());
        Result machine = run("inventory", "--nvml-lib", fake().toString(), "--machine", "cray-1");
        assertEquals(2, machine.code());
        assertTrue(machine.err().contains("dgx-h100, t4x4, a100-bridged, a100-mig, x86-numa, h100-vm"), machine.err());
        Result extra = run("inventory", "oops");
        assertEquals(2, extra.code());
        assertTrue(extra.err().contains("unexpected argument oops"), extra.err());
    }

    @Test
    void aLibraryWithoutRequiredSymbolsIsReportedClearly() {
        Path broken = Path.of(System.getProperty("qgpu.fakeNvml.dir"), "broken", "libnvidia-ml.so.1");
        Result r = run("inventory", "--nvml-lib", broken.toString());
        assertEquals(2, r.code());
        assertTrue(r.err().contains("nvmlDeviceGetPciInfo_v3"), r.err());
        assertTrue(r.err().contains("FUNCTION_NOT_FOUND"), r.err());
    }

    @Test
    void helpListsInventory() {
        Result r = run("help");
        assertTrue(r.out().contains("inventory"), r.out());
        Result usage = run("help", "inventory");
        assertTrue(usage.out().contains("--nvml-lib PATH"), usage.out());
    }
}
