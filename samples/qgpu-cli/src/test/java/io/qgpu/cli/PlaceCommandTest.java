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
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PlaceCommandTest {

    private static final String INVENTORY = "examples/inventory.json";

    record Run(int code, String out, String err) {
        JsonNode json() throws Exception {
            return new ObjectMapper().readTree(out);
        }

        /** tenant -> [node, gpu...] */
        Map<String, List<String>> placements() throws Exception {
            Map<String, List<String>> m = new LinkedHashMap<>();
            for (JsonNode p : json().get("placements")) {
                List<String> v = new ArrayList<>();
                v.add(p.get("node").asText());
                p.get("slices").forEach(s -> v.add(s.get("gpu").asText()));
                m.put(p.get("claim").get("tenant").asText(), v);
            }
            return m;
        }
    }

    static Run run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = Main.run(List.of(args), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    static Run place(String example, String... more) {
        List<String> a = new ArrayList<>(List.of("place", "--inventory", INVENTORY, "--claims", "examples/claims-" + example + ".json"));
        a.addAll(List.of(more));
        return run(a.toArray(new String[0]));
    }

    @Test
    void binpackStacksAndSpreadSpreads() throws Exception {
        Run bp = place("binpack");
        assertEquals(0, bp.code(), bp.err());
        assertEquals(1, new HashSet<>(bp.placements().values()).size(), "all four on one GPU: " + bp.placements());
        Run sp = place("spread");
        assertEquals(0, sp.code(), sp.err());
        assertEquals(4, new HashSet<>(sp.placements().values()).size(), "four GPUs: " + sp.placements());
    }

    @Test
    void affinityJoinsTheFirstTenantsGpuAndExplainsTheOneThatDoesNotFit() throws Exception {
        Run r = place("affinity");
        assertEquals(1, r.code());
        Map<String, List<String>> p = r.placements();
        assertEquals(p.get("etl-reader"), p.get("etl-transform"));
        assertEquals(p.get("etl-reader"), p.get("etl-writer"));
        JsonNode fail = r.json().get("failures").get(0);
        assertEquals("etl-too-big", fail.get("tenant").asText());
        JsonNode gpuReasons = fail.get("nodes").get("t4-box").get("gpuReasons");
        JsonNode mem = gpuReasons.get(p.get("etl-reader").get(1)).get(0);
        assertEquals("INSUFFICIENT_MEMORY", mem.get("code").asText());
        assertEquals(6L << 30, mem.get("shortBy").asLong());
        assertEquals("AFFINITY", fail.get("nodes").get("hgx").get("nodeReasons").get(1).get("code").asText());
    }

    @Test
    void antiAffinityUsesDistinctGpusThenFailsPerGpu() throws Exception {
        Run r = place("anti-affinity");
        assertEquals(1, r.code());
        assertEquals(4, new HashSet<>(r.placements().values()).size());
        JsonNode t4 = r.json().get("failures").get(0).get("nodes").get("t4-box").get("gpuReasons");
        assertEquals(4, t4.size());
        t4.forEach(rs -> assertTrue(rs.toString().contains("ANTI_AFFINITY"), rs.toString()));
    }

    @Test
    void exclusionGivesEachLabelItsOwnGpus() throws Exception {
        Run r = place("exclusion");
        assertEquals(0, r.code(), r.out());
        Map<String, List<String>> p = r.placements();
        assertEquals(p.get("team-a-1"), p.get("team-a-2"), "binpack joins the team's GPU");
        Set<List<String>> distinct = new HashSet<>(List.of(p.get("team-a-1"), p.get("shared-1"), p.get("team-b-1")));
        assertEquals(3, distinct.size(), p.toString());
    }

    @Test
    void placementStartsFromTheTenantsTheInventoryListsAndLooksAhead() throws Exception {
        // GPUs 1, 3, 6 and 7 are held (listed under "tenants"); of 0, 2, 4, 5 the NV2 pair 0-4 would leave
        // 2 and 5 across the sockets, so the claim takes the NV1 pair 0-2 and leaves the pair 4-5
        Run r = run("place", "--inventory", "examples/inventory-partly-filled.json", "--claims", "examples/claims-look-ahead.json");
        assertEquals(0, r.code(), r.err());
        assertEquals(List.of("dgx1", "GPU-dgx1-0", "GPU-dgx1-2"), r.placements().get("pair-2"));
    }

    @Test
    void tenantsThatDoNotFitTheirGpuAreBadInput(@TempDir Path dir) throws Exception {
        Path inv = dir.resolve("inv.json");
        java.nio.file.Files.writeString(inv, java.nio.file.Files.readString(Path.of("examples/inventory-partly-filled.json"))
                .replaceFirst("\"tenant\": \"train-3\",\\s*\"exclusive\": true", "\"tenant\": \"train-3\", \"memoryGiB\": 40"));
        Run r = run("place", "--inventory", inv.toString(), "--claims", "examples/claims-look-ahead.json");
        assertEquals(2, r.code());
        assertTrue(r.err().contains("nodes[].gpus[].tenants"), r.err());
    }

    @Test
    void multiGpuClaimsLandOnNvLinkSets() throws Exception {
        Run r = place("multi-gpu");
        assertEquals(1, r.code());
        Map<String, List<String>> p = r.placements();
        List<String> quad = p.get("allreduce-4").subList(1, 5);
        assertTrue(quad.equals(List.of("GPU-dgx1-0", "GPU-dgx1-1", "GPU-dgx1-2", "GPU-dgx1-3"))
                || quad.equals(List.of("GPU-dgx1-4", "GPU-dgx1-5", "GPU-dgx1-6", "GPU-dgx1-7")), quad.toString());
        // the pairs are NVLink pairs of the DGX-1 cube mesh
        Set<String> nvPairs = Set.of("0-1", "0-2", "0-3", "0-4", "1-2", "1-3", "1-5", "2-3", "2-6", "3-7",
                "4-5", "4-6", "4-7", "5-6", "5-7", "6-7");
        for (String t : List.of("pair-2", "pair-2b")) {
            List<String> g = p.get(t);
            String pair = g.get(1).substring(g.get(1).lastIndexOf('-') + 1) + "-" + g.get(2).substring(g.get(2).lastIndexOf('-') + 1);
            assertTrue(nvPairs.contains(pair), t + " " + pair);
        }
        assertEquals("hgx", p.get("whole-4").get(0));
        assertEquals("t4-box", p.get("pcie-pair").get(0));
        JsonNode fail = r.json().get("failures").get(0);
        assertEquals("too-many", fail.get("tenant").asText());
        assertEquals("NOT_ENOUGH_GPUS", fail.get("nodes").get("dgx1").get("nodeReasons").get(0).get("code").asText());
    }

    @Test
    void onlineSpreadsAndOfflinePacksWithClassPolicies() throws Exception {
        Run r = place("online-offline", "--online-policy", "spread", "--offline-policy", "binpack,binpack");
        assertEquals(0, r.code(), r.out());
        Map<String, List<String>> p = r.placements();
        assertEquals(3, new HashSet<>(List.of(p.get("infer-1"), p.get("infer-2"), p.get("infer-3"))).size(), "online spread");
        assertEquals(p.get("batch-1"), p.get("batch-2"), "offline binpack");
        p.values().forEach(g -> assertTrue(!g.contains("GPU-t4-3") || g == p.get("infer-1") || g == p.get("infer-2")
                || g == p.get("infer-3"), "GPU-t4-3 is kept for online tenants"));
        JsonNode pol = r.json().get("policies");
        assertEquals("spread", pol.get("online").get("gpu").asText());
        assertEquals("binpack", pol.get("offline").get("node").asText());
    }

    @Test
    void explainPrintsTheCandidatesTable(@TempDir Path dir) throws Exception {
        Path out = dir.resolve("result.json");
        Run r = place("multi-gpu", "--explain", "--out", out.toString());
        assertEquals(1, r.code());
        assertTrue(r.out().contains("=>  dgx1"), r.out());
        assertTrue(r.out().matches("(?s).*\\n +nvlink-clique +1\\.000 x 2\\.00  every pair of the set is NVLink\\n.*"), r.out());
        // long candidate and refusal lines are wrapped: no line past the table width
        for (String line : r.out().split("\n")) {
            assertTrue(line.length() <= io.qgpu.core.placement.PlacementExplanation.TABLE_WIDTH, line);
        }
        assertTrue(r.out().contains("        - "), "one refusal reason per line: " + r.out());
        assertTrue(r.out().contains("5 placed, 1 not placed"), r.out());
        JsonNode written = new ObjectMapper().readTree(Files.readString(out));
        assertEquals(5, written.get("placements").size());
    }

    @Test
    void policyFlagsChangeTheEngineDefaults() throws Exception {
        // the binpack example names its policies per claim; spread as engine default must not change it
        Run r = place("binpack", "--node-policy", "spread", "--gpu-policy", "spread");
        assertEquals(1, new HashSet<>(r.placements().values()).size());
        Run multi = place("multi-gpu", "--gpu-policy", "binpack");
        assertEquals("binpack", multi.json().get("policies").get("gpu").asText());
    }

    @Test
    void badUsageAndBadInputExitWithTwoAndSayWhy(@TempDir Path dir) throws Exception {
        Run missing = run("place", "--inventory", INVENTORY);
        assertEquals(2, missing.code());
        assertTrue(missing.err().contains("missing --claims"), missing.err());
        Run badPolicy = place("binpack", "--node-policy", "tightest");
        assertEquals(2, badPolicy.code());
        assertTrue(badPolicy.err().contains("--node-policy = \"tightest\""), badPolicy.err());
        Run noFile = run("place", "--inventory", "nope.json", "--claims", "examples/claims-binpack.json");
        assertEquals(2, noFile.code());
        assertTrue(noFile.err().contains("qgpu place: nope.json: no such file"), noFile.err());
        Path broken = dir.resolve("claims.json");
        Files.writeString(broken, "[{\"tenant\": \"x\", \"memoryGiB\": 1, \"gpuz\": 2}]");
        Run badJson = run("place", "--inventory", INVENTORY, "--claims", broken.toString());
        assertEquals(2, badJson.code());
        assertTrue(badJson.err().contains("gpuz"), badJson.err());
        Run help = run("help");
        assertTrue(help.out().contains("place"), help.out());
    }
}
