package io.qgpu.samples.gpuprobe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Exit codes and the one-line messages, without a GPU. */
class MainTest {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int run(String... args) {
        return Main.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private String errText() {
        return err.toString(StandardCharsets.UTF_8);
    }

    @Test
    void aMissingDriverLibraryIsNoCudaDriverExit3(@TempDir Path dir) {
        String lib = dir.resolve("libcuda.so.1").toString();
        assertEquals(3, run("--library", lib, "--seconds", "1"));
        String e = errText();
        assertTrue(e.startsWith("no CUDA driver (" + lib + ": "), e);
        assertEquals(1, e.strip().lines().count(), "one line: " + e);
        assertEquals("", out.toString(StandardCharsets.UTF_8));
    }

    @Test
    void aLibraryWithoutTheDriverApiIsNoCudaDriverToo() {
        assertEquals(3, run("--library", "libc.so.6"));
        assertTrue(errText().startsWith("no CUDA driver (libc.so.6: "), errText());
        assertTrue(errText().contains("cuInit"), "names the first missing symbol: " + errText());
    }

    @Test
    void aBadFlagIsOneLineNamingFlagAndValueExit2() {
        assertEquals(2, run("--chunk-mib", "lots"));
        assertEquals("gpu-probe: --chunk-mib = \"lots\": must be a whole number between 1 and 1048576\n",
                errText().replace(System.lineSeparator(), "\n"));
    }

    @Test
    void helpPrintsTheFlags() {
        assertEquals(0, run("--help"));
        String text = out.toString(StandardCharsets.UTF_8);
        assertTrue(text.startsWith("usage: gpu-probe"), text);
        for (String flag : new String[] {"--label", "--library", "--device", "--chunk-mib", "--max-mib", "--seconds",
                                         "--iterations", "--blocks-per-sm", "--threads", "--start-at"}) {
            assertTrue(text.contains(flag + " "), flag);
        }
    }
}
