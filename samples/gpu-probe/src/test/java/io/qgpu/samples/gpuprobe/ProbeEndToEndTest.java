package io.qgpu.samples.gpuprobe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The whole probe through JNA against the fake CUDA driver ({@code src/test/c/fake_cuda.c}): the bindings'
 * signatures, the kernel-parameter block ({@code cuLaunchKernel} reads the output pointer and the iteration
 * count through it and refuses a pointer that is not a live allocation big enough for every thread), the
 * events and the result line. The fake has 1024 MiB and a virtual clock of 1e9 iterations per millisecond;
 * it measures nothing about a GPU.
 */
class ProbeEndToEndTest {
    private static final Path FAKE = Path.of(System.getProperty("gpuprobe.fakes.dir", "target/fakes"), "libcuda.so.1");

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int run(String... args) {
        return Main.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private static Map<String, String> fields(String line) {
        assertTrue(line.startsWith("gpu-probe "), line);
        Map<String, String> f = new LinkedHashMap<>();
        for (String kv : line.substring("gpu-probe ".length()).strip().split(" ")) {
            int eq = kv.indexOf('=');
            assertTrue(eq > 0 && kv.indexOf('=', eq + 1) < 0, "one '=' per field: " + kv);
            f.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        return f;
    }

    @Test
    void measuresTheFakeDevice() {
        assertTrue(Files.exists(FAKE), "the build compiles the fake driver to " + FAKE);
        assertEquals(0, run("--library", FAKE.toString(), "--label", "e2e", "--seconds", "0.2", "--iterations", "1000"),
                err.toString(StandardCharsets.UTF_8));
        String text = out.toString(StandardCharsets.UTF_8);
        assertEquals(1, text.strip().lines().count(), "one line: " + text);
        Map<String, String> f = fields(text.strip());
        assertEquals("e2e", f.get("label"));
        assertEquals("Fake_GPU", f.get("name"));
        assertEquals("12040", f.get("driver"));
        assertEquals("9.0", f.get("cc"));
        assertEquals("4", f.get("sms"));
        assertEquals("1024", f.get("mem_total_mib"));
        assertEquals("1024", f.get("ceiling_mib"), "every MiB of the fake's 1024 is found");
        assertEquals("CUDA_ERROR_OUT_OF_MEMORY", f.get("refusal"));
        assertEquals("32", f.get("blocks"), "4 SMs x 8 blocks");
        assertEquals("256", f.get("threads"));
        assertEquals("1000", f.get("iterations"));
        assertTrue(Long.parseLong(f.get("launches")) >= 1);
        // the fake's clock: 1e9 iterations per ms, so 1e12 per second whatever the number of launches
        assertEquals("1.0000e+12", f.get("iter_per_s"));
    }

    @Test
    void theCapStopsTheSearch() {
        assertEquals(0, run("--library", FAKE.toString(), "--seconds", "0.1", "--iterations", "1000", "--max-mib", "300"));
        Map<String, String> f = fields(out.toString(StandardCharsets.UTF_8).strip());
        assertEquals("300", f.get("ceiling_mib"));
        assertEquals("none", f.get("refusal"));
    }

    @Test
    void aFailingCallIsOneLineNamingItExit4() {
        assertEquals(4, run("--library", FAKE.toString(), "--device", "1", "--seconds", "0.1"));
        assertEquals("gpu-probe: cuDeviceGet returned 101 (CUDA_ERROR_INVALID_DEVICE)",
                err.toString(StandardCharsets.UTF_8).strip());
    }
}
