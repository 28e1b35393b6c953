package io.qgpu.djl;

import static org.junit.jupiter.api.Assertions.*;

import ai.djl.Model;
import ai.djl.inference.Predictor;
import io.qgpu.api.InvalidValueException;
import io.qgpu.djl.testing.OnnxMlp;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The hand-encoded ONNX model against the other side: ONNX Runtime (through DJL) loads it and computes what
 * the Java reference forward pass computes, for single rows and batches; its size stays a few kilobytes.
 */
class OnnxMlpTest {

    @Test
    void onnxRuntimeLoadsTheModelAndComputesTheReferenceForwardPass() throws Exception {
        try (Model model = OrtFixture.load();
             Predictor<float[], float[]> p = model.newPredictor(new OrtFixture.RowTranslator())) {
            for (int s = 0; s < 5; s++) {
                float[] x = OrtFixture.row(s);
                assertArrayEquals(OrtFixture.MLP.forward(x), p.predict(x), 1e-5f, "row " + s);
            }
            List<float[]> batch = new ArrayList<>();
            for (int s = 0; s < 7; s++) {
                batch.add(OrtFixture.row(100 + s));
            }
            List<float[]> out = p.batchPredict(batch);
            assertEquals(7, out.size());
            for (int i = 0; i < 7; i++) {
                assertArrayEquals(OrtFixture.MLP.forward(batch.get(i)), out.get(i), 1e-5f, "batch row " + i);
            }
        }
    }

    @Test
    void theGraphHasAMatmulAndAddPerLayerAndAReluPerHiddenLayer() {
        OnnxMlp mlp = OnnxMlp.builder().inputs(3).hidden(5, 4).outputs(2).build();
        String text = new String(mlp.toBytes(), java.nio.charset.StandardCharsets.ISO_8859_1);
        assertEquals(3, count(text, "\"\u0006MatMul"), "op_type MatMul, one per layer");
        assertEquals(2, count(text, "\"\u0004Relu"), "op_type Relu, one per hidden layer");
        assertEquals(3 * 5 + 5 * 4 + 4 * 2, mlp.multiplyAddsPerRow());
        assertEquals(1, OnnxMlp.builder().inputs(1).hidden().outputs(1).build().multiplyAddsPerRow(), "no hidden layer");
    }

    private static int count(String text, String needle) {
        int n = 0;
        for (int i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + 1)) {
            n++;
        }
        return n;
    }

    @Test
    void theDefaultModelIsAFewKilobytesAndWritesToAFile(@TempDir Path dir) throws Exception {
        byte[] bytes = OrtFixture.MLP.toBytes();
        assertTrue(bytes.length > 16 * 32 * 4 + 32 * 8 * 4, "holds its weights: " + bytes.length);
        assertTrue(bytes.length < 4096, "a few kilobytes: " + bytes.length);
        Path f = OrtFixture.MLP.write(dir.resolve("sub/mlp.onnx"));
        assertArrayEquals(bytes, Files.readAllBytes(f));
        assertArrayEquals(bytes, OnnxMlp.builder().seed(7).build().toBytes(), "the same seed, the same bytes");
        assertFalse(java.util.Arrays.equals(bytes, OnnxMlp.builder().seed(8).build().toBytes()));
    }

    @Test
    void badShapesAreRefusedNamingTheField() {
        InvalidValueException e = assertThrows(InvalidValueException.class, () -> OnnxMlp.builder().inputs(0));
        assertEquals("onnxMlp.inputs", e.field());
        e = assertThrows(InvalidValueException.class, () -> OnnxMlp.builder().hidden(8, -1));
        assertEquals("onnxMlp.hidden[1]", e.field());
        e = assertThrows(InvalidValueException.class, () -> OrtFixture.MLP.forward(new float[3]));
        assertEquals("onnxMlp.row.length", e.field());
        assertEquals(3, e.value());
    }
}
