package io.qgpu.kubernetes.allocator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The command line's answers: one line and exit 2 for what can be checked at start. */
class MainTest {
    @TempDir
    Path dir;

    record Run(int code, String out, String err) {
    }

    static Run run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = Main.run(args, Map.of(), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void helpPrintsTheUsageAndExitsZero() {
        Run r = run("--help");
        assertEquals(0, r.code());
        assertTrue(r.out().startsWith("usage: qgpu-dra-allocator"), r.out());
    }

    @Test
    void aBadFlagIsOneLineAndExitTwo() {
        Run r = run("--policy", "nope", "--no-webhook");
        assertEquals(2, r.code());
        assertEquals(1, r.err().lines().count(), r.err());
        assertTrue(r.err().contains("--policy") && r.err().contains("nope"), r.err());
    }

    @Test
    void anApiServerThatDoesNotAnswerIsNamedWithItsUrlWithinTheTimeout() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();   // closed again: nothing listens there
        }
        Path kubeconfig = dir.resolve("kubeconfig");
        Files.writeString(kubeconfig, String.join("\n", "apiVersion: v1", "kind: Config", "clusters:", "- name: c", "  cluster:",
                "    server: https://127.0.0.1:" + port, "    insecure-skip-tls-verify: true", "contexts:", "- name: c",
                "  context:", "    cluster: c", "    user: u", "current-context: c", "users:", "- name: u", "  user:",
                "    token: t", ""));
        long t0 = System.nanoTime();
        Run r = run("--kubeconfig", kubeconfig.toString(), "--no-webhook", "--api-timeout", "3s");
        long seconds = (System.nanoTime() - t0) / 1_000_000_000L;
        assertEquals(2, r.code(), r.err());
        assertEquals(1, r.err().lines().count(), r.err());
        assertTrue(r.err().contains("127.0.0.1:" + port), r.err());
        assertTrue(seconds < 30, "answered after " + seconds + " s");
    }
}
