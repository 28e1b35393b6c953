package io.qgpu.djl;

import ai.djl.Device;
import ai.djl.MalformedModelException;
import ai.djl.Model;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.translate.Batchifier;
import ai.djl.translate.Translator;
import ai.djl.translate.TranslatorContext;
import io.qgpu.djl.testing.OnnxMlp;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.util.List;

/** The tests' real model: {@link OnnxMlp}'s default shape loaded into DJL's ONNX Runtime engine on the CPU. */
final class OrtFixture {

    static final OnnxMlp MLP = OnnxMlp.builder().seed(7).build();

    private OrtFixture() {
    }

    static Model load() throws IOException, MalformedModelException {
        Model model = Model.newInstance("mlp", Device.cpu(), "OnnxRuntime");
        model.load(new ByteArrayInputStream(MLP.toBytes()));
        return model;
    }

    /** One row in, one row out; batches stack rows into [N, inputs]. */
    static final class RowTranslator implements Translator<float[], float[]> {
        @Override
        public NDList processInput(TranslatorContext ctx, float[] row) {
            NDArray x = ctx.getNDManager().create(row, new Shape(1, row.length));
            return new NDList(x);
        }

        @Override
        public float[] processOutput(TranslatorContext ctx, NDList list) {
            return list.singletonOrThrow().toFloatArray();
        }

        @Override
        public NDList batchProcessInput(TranslatorContext ctx, List<float[]> rows) {
            int n = rows.size();
            int w = rows.get(0).length;
            float[] flat = new float[n * w];
            for (int i = 0; i < n; i++) {
                System.arraycopy(rows.get(i), 0, flat, i * w, w);
            }
            return new NDList(ctx.getNDManager().create(flat, new Shape(n, w)));
        }

        @Override
        public List<float[]> batchProcessOutput(TranslatorContext ctx, NDList list) {
            NDArray y = list.singletonOrThrow();
            int n = (int) y.getShape().get(0);
            int w = (int) y.getShape().get(1);
            float[] flat = y.toFloatArray();
            float[][] rows = new float[n][w];
            for (int i = 0; i < n; i++) {
                System.arraycopy(flat, i * w, rows[i], 0, w);
            }
            return List.of(rows);
        }

        @Override
        public Batchifier getBatchifier() {
            return Batchifier.STACK;
        }
    }

    static float[] row(int seed) {
        float[] r = new float[MLP.inputs()];
        for (int i = 0; i < r.length; i++) {
            r[i] = ((seed * 31 + i * 7) % 17 - 8) / 8f;
        }
        return r;
    }
}
