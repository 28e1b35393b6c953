package io.qgpu.samples.djl;

import static org.junit.jupiter.api.Assertions.*;

import ai.djl.Model;
import ai.djl.inference.Predictor;
import io.qgpu.djl.testing.OnnxMlp;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Runs the demo's short configuration end to end on the real model: every request answered in both phases, no
 * lease left open, the batch job ran, the report prints. Nothing here depends on timing: the latencies are
 * only printed (the gate's timing promises are tested on a virtual clock in qgpu-djl).
 */
@Timeout(120) // a hang guard only
class DjlDemoSmokeTest {

    @Test
    void bothPhasesAnswerEveryRequestAndLeakNothing() throws Exception {
        DemoConfig c = DemoConfig.quick();
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(buf, true, StandardCharsets.UTF_8);
        Main.Report r = Main.run(c, false, out);
        Main.print(r, out);
        for (Main.Phase p : new Main.Phase[] {r.withoutGate(), r.withGate()}) {
            assertEquals(c.requests(), p.ok(), p.name() + ": every request answered with 200");
            assertEquals(c.requests(), p.handlerNanos().length);
            assertTrue(p.offlineRowsPerSecond() > 0, p.name() + ": the batch job ran");
        }
        assertEquals(c.requests(), r.withGate().gateWaits().length, "every online prediction went through the gate");
        assertEquals(0, r.withGate().leakedLeases());
        String text = buf.toString(StandardCharsets.UTF_8);
        assertTrue(text.contains("with the gate") && text.contains("p99"), text);
    }

    @Test
    void theDemoModelComputesTheReferenceForwardPass() throws Exception {
        OnnxMlp mlp = OnnxMlp.builder().inputs(Main.INPUTS).hidden(DemoConfig.quick().hidden()).outputs(Main.OUTPUTS)
                .seed(42).build();
        try (Model model = Main.load(mlp, false);
             Predictor<float[][], float[][]> p = model.newPredictor(new Rows())) {
            float[][] rows = Rows.make(3, Main.INPUTS, 5);
            float[][] y = p.predict(rows);
            for (int i = 0; i < rows.length; i++) {
                assertArrayEquals(mlp.forward(rows[i]), y[i], 1e-4f, "row " + i);
            }
        }
    }
}
