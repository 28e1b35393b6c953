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
        String[] r = run(0, "replay", "--nodes", n.toString(), "--pods", p.toString(), "--policies", "binpack,spread,default,fragmentation,fragmentation-sample,kube-dra,dra-allocator",
                "--seeds", "1-3", "--ratio", "1.2", "--out", out.toString());
        assertTrue(r[0].contains("6 nodes, 18 GPUs, 24 pods"), r[0]);
        for (String policy : List.of("binpack", "spread", "default", "fragmentation", "fragmentation-sample", "kube-dra", "dra-allocator")) {
            assertTrue(r[0].contains(policy), r[0]);
            List<String> curve = Files.readAllLines(out.resolve("curve-" + policy + ".csv"));
            assertEquals("arrived_percent,seed_1,seed_2,seed_3,mean", curve.get(0));
            assertEquals(121, curve.size(), "one row per percent of arrived workload, 1..120");
        }
        List<String> summary = Files.readAllLines(out.resolve("summary.csv"));
        assertEquals(1 + 7 * 3, summary.size());
        assertTrue(summary.stream().filter(l -> l.startsWith("kube-dra,")).count() == 3, summary.toString());
        assertTrue(Files.size(out.resolve("curve.png")) > 1000);
    }

    @Test
    void badInputIsAnErrorNamingTheFileAndLine() throws Exception {
        Path n = dir.resolve("nodes.csv");
        Files.writeString(n, "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,131072,two,T4\n");
        String[] r = run(2, "replay", "--nodes", n.toString(), "--pods", n.toString());
        assertTrue(r[1].contains(n + ":2: column gpu: 'two' is not a whole number"), r[1]);
        String[] u = run(2, "replay", "--nodes", n.toString(), "--pods", n.toString(), "--policies", "fastest");
        assertTrue(u[1].contains("fastest") && u[1].contains("fragmentation-sample, kube-dra"), u[1]);
        String[] s = run(2, "replay", "--nodes", n.toString(), "--pods", n.toString(), "--seeds", "9-1");
        assertTrue(s[1].contains("--seeds 9-1"), s[1]);
    }

    private Path file(String name, String text) throws Exception {
        return Files.writeString(dir.resolve(name), text);
    }

    /** Issue 30 item 3: nothing accepted silently, and CSV read as CSV. */
    @Test
    void emptyOrMeaninglessTracesAreRefusedAndDoubtfulOnesWarned() throws Exception {
        Path noGpu = file("n0.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,131072,0,\nn1,32000,131072,0,\n");
        Path gpus = file("n2.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,131072,2,G2\nn1,32000,131072,2,T4\n");
        Path onePod = file("p1.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,1,500\n");
        Path noPods = file("p0.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n");
        Path cpuOnly = file("pc.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,0,0\n");
        assertTrue(run(2, "replay", "--nodes", noGpu.toString(), "--pods", onePod.toString())[1]
                .startsWith("qgpu replay: --nodes " + noGpu + ": no node has a GPU (the gpu column is 0 on all 2 rows); nothing to replay"));
        assertTrue(run(2, "replay", "--nodes", gpus.toString(), "--pods", noPods.toString())[1]
                .startsWith("qgpu replay: --pods " + noPods + ": holds no pods"));
        assertTrue(run(2, "replay", "--nodes", gpus.toString(), "--pods", cpuOnly.toString())[1]
                .startsWith("qgpu replay: --pods " + cpuOnly + ": no pod asks for a GPU"));
        assertTrue(run(2, "replay", "--nodes", gpus.toString(), "--pods", onePod.toString(), "--ratio", "1.2", "--at", "1.5")[1]
                .startsWith("qgpu replay: --at 1.5: must be at most --ratio (1.2)"));
        assertTrue(run(2, "replay", "--nodes", gpus.toString(), "--pods", onePod.toString(), "--ratio", "101")[1]
                .startsWith("qgpu replay: --ratio 101: must be more than 0 and at most 100"));
        assertTrue(run(2, "replay", "--nodes", gpus.toString(), "--pods", onePod.toString(), "--resolution", "2.5")[1]
                .startsWith("qgpu replay: --resolution 2.5: must be 0 (the exact linear score) or a whole number of steps between 1 and"));
        assertTrue(run(2, "replay", "--nodes", gpus.toString(), "--pods", onePod.toString(), "--shortlist", "0")[1]
                .startsWith("qgpu replay: --shortlist 0: must be a whole number of nodes, 1 or more (leave it out for every node)"));
        assertTrue(run(2, "replay", "--nodes", gpus.toString(), "--pods", onePod.toString(), "--shortlist", "all")[1]
                .startsWith("qgpu replay: --shortlist all: must be a whole number of nodes, 1 or more"));
        assertTrue(run(2, "replay", "--nodes", gpus.toString(), "--pods", onePod.toString(), "--threads", "0")[1]
                .startsWith("qgpu replay: --threads 0: must be a whole number between 1 and 1024"));

        // quoted fields with commas, an unknown model (16 GiB taken) and a gpu_spec no node has: warned, and it runs
        Path quoted = file("pq.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n\"p,0\",1000,1024,1,500,A100\n"
                + "p1,1000,\"1024\",1,500,\"T4|V100M16\"\n\"p\"\"2\",1000,1024,1,250,\n");
        String[] r = run(0, "replay", "--nodes", gpus.toString(), "--pods", quoted.toString(), "--seeds", "1", "--resolution", "0",
                "--out", dir.resolve("out").toString());
        assertTrue(r[0].contains("warning: " + gpus + ": column model: G2 is not in the memory table (A10, A100, P100, T4, V100M16,"
                + " V100M32): taken as 16 GiB per GPU"), r[0]);
        assertTrue(r[0].contains("warning: " + quoted + ": column gpu_spec: 1 pod(s) ask only for GPU models no node has (A100 (1 pod);"
                + " the nodes have G2, T4): they can never be placed"), r[0]);
        assertTrue(r[0].contains("2 nodes, 4 GPUs, 3 pods"), r[0]);
        assertTrue(!r[0].contains("NaN"), r[0]);
        Path open = file("po.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n\"p0,1000,1024,1,500\n");
        assertTrue(run(2, "replay", "--nodes", gpus.toString(), "--pods", open.toString())[1]
                .contains(open + ":2: column field 1: '\"p0,1000,1024,1,500' opens a quote that the line does not close"));
    }
}
