package io.qgpu.samples.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.translate.Batchifier;
import ai.djl.translate.Translator;
import ai.djl.translate.TranslatorContext;

/**
 * The demo's translator: a batch of rows in ({@code float[rows][width]}), a batch of rows out; the model's input
 * is {@code [rows, width]}. One call is one forward pass.
 *
 * <p>Thread safety: stateless.
 */
final class Rows implements Translator<float[][], float[][]> {

    @Override
    public NDList processInput(TranslatorContext ctx, float[][] rows) {
        int n = rows.length;
        int w = rows[0].length;
        float[] flat = new float[n * w];
        for (int i = 0; i < n; i++) {
            System.arraycopy(rows[i], 0, flat, i * w, w);
        }
        return new NDList(ctx.getNDManager().create(flat, new Shape(n, w)));
    }

    @Override
    public float[][] processOutput(TranslatorContext ctx, NDList list) {
        NDArray y = list.singletonOrThrow();
        int n = (int) y.getShape().get(0);
        int w = (int) y.getShape().get(1);
        float[] flat = y.toFloatArray();
        float[][] out = new float[n][w];
        for (int i = 0; i < n; i++) {
            System.arraycopy(flat, i * w, out[i], 0, w);
        }
        return out;
    }

    @Override
    public Batchifier getBatchifier() {
        return null;   // one input is already a batch
    }

    /** {@code n} rows of {@code width}, the same for the same seed. */
    static float[][] make(int n, int width, int seed) {
        float[][] rows = new float[n][width];
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < width; j++) {
                rows[i][j] = ((seed * 31 + i * 17 + j * 7) % 23 - 11) / 11f;
            }
        }
        return rows;
    }
}
