package io.qgpu.samples.inference;

import static org.junit.jupiter.api.Assertions.*;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Runs the demo's short configuration end to end. Nothing here depends on timing: it checks that
 * every request was answered in both phases, that the gate leaked no lease, and that the report
 * prints; the latency numbers themselves are only printed.
 */
@Timeout(120) // a hang guard only
class InferenceDemoSmokeTest {

    @Test
    void bothPhasesAnswerEveryRequestAndLeakNothing() throws Exception {
        DemoConfig c = DemoConfig.quick();
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(buf, true, StandardCharsets.UTF_8);
        Main.Report r = Main.run(c, out);
        Main.print(r, out);

        for (Main.Phase p : new Main.Phase[] {r.withoutGate(), r.withGate()}) {
            assertEquals(c.requests(), p.latencies().length);
            assertEquals(c.requests(), p.ok(), p.name() + ": every request answered with 200");
            assertEquals(c.requests(), p.serverTimes().length);
            for (long l : p.latencies()) {
                assertTrue(l > 0, p.name() + ": latency measured");
            }
            assertTrue(p.percentile(0.99) >= p.percentile(0.5));
        }
        assertEquals(0, r.withGate().leakedLeases());
        assertTrue(r.withoutGate().offlineSlicesPerSecond() > 0, "the batch job ran");
        String text = buf.toString(StandardCharsets.UTF_8);
        assertTrue(text.contains("without the gate"), text);
        assertTrue(text.contains("with the gate"), text);
        assertTrue(text.contains("p99"), text);
    }

    @Test
    void theFakeGpuRunsKernelsOneAtATime() throws Exception {
        FakeGpu gpu = new FakeGpu();
        int threads = 4;
        Thread[] ts = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            ts[i] = new Thread(() -> {
                for (int k = 0; k < 20; k++) {
                    gpu.run(10_000);
                }
            });
        }
        for (Thread t : ts) {
            t.start();
        }
        for (Thread t : ts) {
            t.join();
        }
        assertEquals(80, gpu.kernels());
        assertTrue(gpu.busyNanos() >= 80 * 10_000L);
        assertEquals(1, gpu.mostAtOnce(), "kernels never overlap");
    }
}
