package io.qgpu.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The host-resources example of samples/qgpu-cli/examples does what its README says. */
class HostPlacementTest {

    private static final Path EXAMPLES = CliConsistencyTest.ROOT.resolve("samples/qgpu-cli/examples");

    @Test
    void theHostExamplePlacesByCpuAndRefusesWithTheShortfall(@TempDir Path tmp) throws Exception {
        Path out = tmp.resolve("placements.json");
        LedgerCommandTest.Run r = LedgerCommandTest.run("place", "--inventory", EXAMPLES.resolve("inventory-host.json").toString(),
                "--claims", EXAMPLES.resolve("claims-host.json").toString(), "--out", out.toString());
        assertEquals(1, r.code(), r.err());   // etl-too-big does not fit: the example shows exactly that
        JsonNode doc = new ObjectMapper().readTree(Files.readString(out));
        List<String> placed = new ArrayList<>();
        for (JsonNode p : doc.get("placements")) {
            placed.add(p.get("claim").get("tenant").asText() + "@" + p.get("node").asText());
        }
        // infer-a: t4-small-cpu has a free GPU but only 2 of 8 CPUs left
        assertEquals("infer-a@t4-big-cpu", placed.get(0));
        assertEquals("etl-a@cpu-only", placed.get(1));
        assertTrue(placed.get(2).startsWith("etl-b@"), placed.toString());
        assertEquals(3, placed.size(), placed.toString());
        JsonNode hostOnly = doc.get("placements").get(1);
        assertEquals(0, hostOnly.get("slices").size());
        assertEquals("void", hostOnly.get("environment").get("NVIDIA_VISIBLE_DEVICES").asText());
        String failures = doc.get("failures").toString();
        assertTrue(failures.contains("etl-too-big"), failures);
        assertTrue(failures.contains("INSUFFICIENT_CPU requested 40000 millicores"), failures);

        LedgerCommandTest.Run explained = LedgerCommandTest.run("place", "--inventory",
                EXAMPLES.resolve("inventory-host.json").toString(), "--claims", EXAMPLES.resolve("claims-host.json").toString(),
                "--explain", "--out", tmp.resolve("x.json").toString());
        assertTrue(explained.out().contains("host-resources"), explained.out());
        assertTrue(explained.out().contains("t4-small-cpu: INSUFFICIENT_CPU requested 4000 millicores, free 2000 millicores"),
                explained.out());
    }
}
