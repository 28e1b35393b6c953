package io.qgpu.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code qgpu replay} end to end on a small synthetic trace. */
class ReplayCommandTest {

    @TempDir
    Path dir;

    String[] run(int expectRc, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = Main.run(List.of(args), new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        String o = out.toString(StandardCharsets.UTF_8);
        String e = err.toString(StandardCharsets.UTF_8);
        assertEquals(expectRc, rc, o + e);
        return new String[] {o, e};
    }

    @Test
    void writesTheCurvesTheSummaryAndTheChart() throws Exception {
        StringBuilder nodes = new StringBuilder("sn,cpu_milli,memory_mib,gpu,model\n");
        for (int i = 0; i < 6; i++) {
            nodes.append("n").append(i).append(",32000,131072,").append(i % 2 == 0 ? 2 : 4).append(",").append(i < 3 ? "T4" : "V100M16").append('\n');
        }
        StringBuilder pods = new StringBuilder("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos\n");
        int[] milli = {250, 500, 1000, 300, 700, 100, 1000, 0};
        for (int i = 0; i < 24; i++) {
            int m = milli[i % milli.length];
            pods.append("p").append(i).append(",").append(2000 + 500 * (i % 3)).append(",4096,").append(m == 0 ? 0 : i % 11 == 0 ? 2 : 1)
                    .append(",").append(m).append(",").append(i % 7 == 0 ? "T4" : "").append(",LS\n");
        }
        Path n = dir.resolve("nodes.csv");
        Path p = dir.resolve("pods.csv");
        Files.writeString(n, nodes);
        Files.writeString(p, pods);
        Path out = dir.resolve("out");
        String[] r = run(0, "replay", "--nodes", n.toString(), "--pods", p.toString(), "--policies", "binpack,spread,default,fragmentation,fragmentation-sample",
                "--seeds", "1-3", "--ratio", "1.2", "--out", out.toString());
        assertTrue(r[0].contains("6 nodes, 18 GPUs, 24 pods"), r[0]);
        for (String policy : List.of("binpack", "spread", "default", "fragmentation", "fragmentation-sample")) {
            assertTrue(r[0].contains(policy), r[0]);
            List<String> curve = Files.readAllLines(out.resolve("curve-" + policy + ".csv"));
            assertEquals("arrived_percent,seed_1,seed_2,seed_3,mean", curve.get(0));
            assertEquals(121, curve.size(), "one row per percent of arrived workload, 1..120");
        }
        List<String> summary = Files.readAllLines(out.resolve("summary.csv"));
        assertEquals(1 + 5 * 3, summary.size());
        assertTrue(Files.size(out.resolve("curve.png")) > 1000);
    }

    @Test
    void badInputIsAnErrorNamingTheFileAndLine() throws Exception {
        Path n = dir.resolve("nodes.csv");
        Files.writeString(n, "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,131072,two,T4\n");
        String[] r = run(2, "replay", "--nodes", n.toString(), "--pods", n.toString());
        assertTrue(r[1].contains(n + ":2: column gpu: 'two' is not a whole number"), r[1]);
        String[] u = run(2, "replay", "--nodes", n.toString(), "--pods", n.toString(), "--policies", "fastest");
        assertTrue(u[1].contains("fastest"), u[1]);
        String[] s = run(2, "replay", "--nodes", n.toString(), "--pods", n.toString(), "--seeds", "9-1");
        assertTrue(s[1].contains("--seeds 9-1"), s[1]);
    }
}
