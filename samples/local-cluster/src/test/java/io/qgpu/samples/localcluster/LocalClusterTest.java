package io.qgpu.samples.localcluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * End to end: what {@code ./qgpu-local-cluster} runs ({@link Main#run}), with its defaults (a dgx-h100 for the DRA driver, a t4x4
 * for the device plugin, HAMi-core), with the printed
 * environments of both containers checked line by line.
 */
class LocalClusterTest {
    private static final Pattern ENV = Pattern.compile("^ {5}([A-Z_][A-Z0-9_]*)=(.*)$");

    @Test
    @Timeout(120)
    void walksOnePodDownEachPathFromClaimToContainerEnvironment() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = Main.run(new String[0], new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        String text = out.toString(StandardCharsets.UTF_8);
        System.out.println(text);
        assertEquals(0, rc, () -> "exit code; stderr: " + err.toString(StandardCharsets.UTF_8));

        String[] parts = text.split("\n== ");
        assertEquals(3, parts.length, text);
        assertTrue(parts[1].startsWith("DRA:"), parts[1]);
        assertTrue(parts[2].startsWith("device plugin:"), parts[2]);
        assertTrue(parts[1].contains("ResourceSlice gpu-dra-gpu.qgpu.io: 8 devices"), parts[1]);
        assertTrue(parts[1].contains("-> CDI devices [qgpu.io/gpu="), parts[1]);
        assertTrue(parts[2].contains("fits [\"gpu-dp\"]"), parts[2]);

        // DRA: 10Gi and 30 cores of gpu-0, online, at most 60%
        Map<String, String> dra = environment(parts[1]);
        assertTrue(dra.get("NVIDIA_VISIBLE_DEVICES").matches("GPU-[0-9a-f-]+"), dra.toString());
        assertEquals(String.valueOf(10L << 30), dra.get("QGPU_MEMORY_LIMIT_BYTES"), dra.toString());
        assertEquals("30", dra.get("QGPU_COMPUTE_REQUEST"));
        assertEquals("60", dra.get("QGPU_COMPUTE_LIMIT"));
        assertEquals("online", dra.get("QGPU_PRIORITY"));
        assertEquals("hami-core", dra.get("QGPU_SHARING"), dra.toString());
        assertEquals("10240m", dra.get("CUDA_DEVICE_MEMORY_LIMIT_0"), dra.toString());
        assertEquals("60", dra.get("CUDA_DEVICE_SM_LIMIT"), dra.toString());   // HAMi-core holds the limit

        // device plugin: the extender's decision, 8 GiB and 20%, online, at most 50%
        Map<String, String> dp = environment(parts[2]);
        assertTrue(dp.get("NVIDIA_VISIBLE_DEVICES").matches("GPU-[0-9a-f-]+"), dp.toString());
        assertEquals(String.valueOf(8L << 30), dp.get("QGPU_MEMORY_LIMIT_BYTES"), dp.toString());
        assertEquals("20", dp.get("QGPU_COMPUTE_REQUEST"));
        assertEquals("50", dp.get("QGPU_COMPUTE_LIMIT"));
        assertEquals("online", dp.get("QGPU_PRIORITY"));
        assertEquals("default/dp-infer", dp.get("QGPU_TENANT"));
        assertEquals("hami-core", dp.get("QGPU_SHARING"), dp.toString());
        assertEquals("8192m", dp.get("CUDA_DEVICE_MEMORY_LIMIT_0"), dp.toString());
        assertEquals("50", dp.get("CUDA_DEVICE_SM_LIMIT"), dp.toString());
        // two nodes, two machines: an H100 for the DRA claim, a T4 for the device plugin's pod
        assertTrue(!dra.get("NVIDIA_VISIBLE_DEVICES").equals(dp.get("NVIDIA_VISIBLE_DEVICES")), text);
        assertTrue(text.contains("done in "), text);
    }

    @Test
    void badUsageIsRefusedWithExitCode2() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        assertEquals(2, Main.run(new String[] {"--bogus"}, new PrintStream(new ByteArrayOutputStream()),
                new PrintStream(err, true, StandardCharsets.UTF_8)));
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("unknown option --bogus"));
        ByteArrayOutputStream mps = new ByteArrayOutputStream();
        assertEquals(2, Main.run(new String[] {"--sharing", "mps"}, new PrintStream(new ByteArrayOutputStream()),
                new PrintStream(mps, true, StandardCharsets.UTF_8)));
        assertTrue(mps.toString(StandardCharsets.UTF_8).contains("--sharing mps: not in the local cluster"), mps.toString(StandardCharsets.UTF_8));
    }

    /** The {@code NAME=value} lines of one walk's container. */
    private static Map<String, String> environment(String walk) {
        Map<String, String> env = new LinkedHashMap<>();
        List<String> lines = walk.lines().toList();
        int from = 0;
        while (from < lines.size() && !lines.get(from).contains("starts with:")) {
            from++;
        }
        for (String line : lines.subList(Math.min(from + 1, lines.size()), lines.size())) {
            Matcher m = ENV.matcher(line);
            if (m.matches()) {
                env.put(m.group(1), m.group(2));
            }
        }
        assertTrue(!env.isEmpty(), walk);
        return env;
    }
}
