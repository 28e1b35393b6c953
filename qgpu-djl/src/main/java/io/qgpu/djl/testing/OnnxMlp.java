package io.qgpu.djl.testing;

import io.qgpu.api.InvalidValueException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * A small real model, made by code: a multi-layer perceptron (matmul, add, relu per hidden layer; matmul and
 * add for the output layer) written as an ONNX {@code ModelProto} (IR version 8, opset 13), with weights drawn
 * from a seed. It lets a server's gate wiring be tested on a real engine without a GPU or a download; the
 * default shape (16 inputs, one hidden layer of 32, 8 outputs) is about 2.9 KB.
 *
 * <pre>{@code
 * OnnxMlp mlp = OnnxMlp.builder().inputs(16).hidden(32).outputs(8).seed(7).build();
 * Path file = mlp.write(dir.resolve("mlp.onnx"));
 * float[] expected = mlp.forward(new float[16]);   // what an engine must compute for one row
 * }</pre>
 *
 * <p>The graph has one input {@code x} of shape {@code [N, inputs]} ({@code N} symbolic, so any batch size
 * runs) and one output {@code y} of shape {@code [N, outputs]}, both float32. The protobuf is encoded here by
 * hand (the six message types it needs are a few dozen lines of wire format), so neither the ONNX Python
 * package nor generated classes are needed; {@code OnnxMlpTest} checks it against ONNX Runtime.
 *
 * <p>Thread safety: immutable.
 */
public final class OnnxMlp {

    private static final int FLOAT = 1;           // TensorProto.DataType.FLOAT
    private static final long IR_VERSION = 8;
    private static final long OPSET = 13;

    private final int[] widths;                   // inputs, hidden..., outputs
    private final float[][] weights;              // layer i: widths[i] x widths[i + 1], row-major
    private final float[][] biases;               // layer i: widths[i + 1]

    private OnnxMlp(int[] widths, long seed) {
        this.widths = widths;
        int layers = widths.length - 1;
        this.weights = new float[layers][];
        this.biases = new float[layers][];
        SplittableRandom random = new SplittableRandom(seed);
        for (int l = 0; l < layers; l++) {
            int in = widths[l];
            int out = widths[l + 1];
            double scale = 1.0 / Math.sqrt(in);
            float[] w = new float[in * out];
            for (int i = 0; i < w.length; i++) {
                w[i] = (float) ((random.nextDouble() * 2 - 1) * scale);
            }
            float[] b = new float[out];
            for (int i = 0; i < b.length; i++) {
                b[i] = (float) (random.nextDouble() * 0.2 - 0.1);
            }
            weights[l] = w;
            biases[l] = b;
        }
    }

    /** A builder: 16 inputs, one hidden layer of 32, 8 outputs, seed 1 unless set. */
    public static Builder builder() {
        return new Builder();
    }

    /** Width of the input row. */
    public int inputs() {
        return widths[0];
    }

    /** Width of the output row. */
    public int outputs() {
        return widths[widths.length - 1];
    }

    /** Multiply-adds per row (the work of one row, for sizing a demo). */
    public long multiplyAddsPerRow() {
        long n = 0;
        for (int l = 0; l + 1 < widths.length; l++) {
            n += (long) widths[l] * widths[l + 1];
        }
        return n;
    }

    /**
     * The reference forward pass of one row, in plain Java (float arithmetic in the same order for every
     * row): what an engine must compute, up to rounding.
     *
     * @throws InvalidValueException if the row's length is not {@link #inputs()}
     */
    public float[] forward(float[] row) {
        if (row == null || row.length != inputs()) {
            throw new InvalidValueException("onnxMlp.row.length", row == null ? null : row.length,
                    "must be " + inputs());
        }
        float[] h = row;
        for (int l = 0; l + 1 < widths.length; l++) {
            int in = widths[l];
            int out = widths[l + 1];
            float[] next = new float[out];
            for (int j = 0; j < out; j++) {
                float s = 0;
                for (int i = 0; i < in; i++) {
                    s += h[i] * weights[l][i * out + j];
                }
                s += biases[l][j];
                next[j] = l + 2 < widths.length ? Math.max(0f, s) : s;
            }
            h = next;
        }
        return h;
    }

    /** The model as ONNX protobuf bytes. */
    public byte[] toBytes() {
        Proto graph = new Proto();
        int layers = widths.length - 1;
        String h = "x";
        for (int l = 0; l < layers; l++) {
            String w = "w" + l;
            String b = "b" + l;
            String mm = "mm" + l;
            String add = l + 1 < layers ? "add" + l : "y";
            graph.message(1, node("MatMul" + l, "MatMul", List.of(h, w), mm));
            graph.message(1, node("Add" + l, "Add", List.of(mm, b), add));
            if (l + 1 < layers) {
                String relu = "relu" + l;
                graph.message(1, node("Relu" + l, "Relu", List.of(add), relu));
                h = relu;
            }
        }
        graph.string(2, "qgpu-mlp");
        for (int l = 0; l < layers; l++) {
            graph.message(5, tensor("w" + l, new long[] {widths[l], widths[l + 1]}, weights[l]));
            graph.message(5, tensor("b" + l, new long[] {widths[l + 1]}, biases[l]));
        }
        graph.message(11, valueInfo("x", inputs()));
        graph.message(12, valueInfo("y", outputs()));

        Proto opset = new Proto();
        opset.string(1, "");
        opset.varint(2, OPSET);

        Proto model = new Proto();
        model.varint(1, IR_VERSION);
        model.string(2, "qgpu-djl");
        model.message(7, graph);
        model.message(8, opset);
        return model.bytes();
    }

    /** Writes {@link #toBytes()} to {@code file} (creating its parent folders) and returns {@code file}. */
    public Path write(Path file) throws IOException {
        Path parent = file.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        Files.write(file, toBytes());
        return file;
    }

    private static Proto node(String name, String op, List<String> inputs, String output) {
        Proto n = new Proto();
        for (String in : inputs) {
            n.string(1, in);
        }
        n.string(2, output);
        n.string(3, name);
        n.string(4, op);
        return n;
    }

    private static Proto tensor(String name, long[] dims, float[] values) {
        Proto t = new Proto();
        for (long d : dims) {
            t.varint(1, d);
        }
        t.varint(2, FLOAT);
        t.string(8, name);
        ByteBuffer raw = ByteBuffer.allocate(values.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        for (float v : values) {
            raw.putFloat(v);
        }
        t.bytes(9, raw.array());
        return t;
    }

    /** A float32 tensor value of shape [N, width]. */
    private static Proto valueInfo(String name, int width) {
        Proto batch = new Proto();
        batch.string(2, "N");                          // Dimension.dim_param
        Proto cols = new Proto();
        cols.varint(1, width);                         // Dimension.dim_value
        Proto shape = new Proto();
        shape.message(1, batch);
        shape.message(1, cols);
        Proto tensorType = new Proto();
        tensorType.varint(1, FLOAT);                   // TypeProto.Tensor.elem_type
        tensorType.message(2, shape);
        Proto type = new Proto();
        type.message(1, tensorType);                   // TypeProto.tensor_type
        Proto v = new Proto();
        v.string(1, name);
        v.message(2, type);
        return v;
    }

    @Override
    public String toString() {
        return "OnnxMlp" + Arrays.toString(widths);
    }

    /** Protobuf wire format: varints (type 0) and length-delimited fields (type 2), all this model needs. */
    private static final class Proto {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();

        void varint(int field, long value) {
            raw((long) field << 3);
            raw(value);
        }

        void bytes(int field, byte[] value) {
            raw((long) field << 3 | 2);
            raw(value.length);
            out.writeBytes(value);
        }

        void string(int field, String value) {
            bytes(field, value.getBytes(StandardCharsets.UTF_8));
        }

        void message(int field, Proto value) {
            bytes(field, value.bytes());
        }

        byte[] bytes() {
            return out.toByteArray();
        }

        private void raw(long v) {
            while ((v & ~0x7FL) != 0) {
                out.write((int) (v & 0x7F) | 0x80);
                v >>>= 7;
            }
            out.write((int) v);
        }
    }

    /**
     * Fail-fast builder.
     *
     * <p>Thread safety: not thread-safe.
     */
    public static final class Builder {
        private int inputs = 16;
        private final List<Integer> hidden = new ArrayList<>(List.of(32));
        private boolean hiddenSet;
        private int outputs = 8;
        private long seed = 1;

        private Builder() {
        }

        /** Width of the input row, 1..65536. */
        public Builder inputs(int n) {
            this.inputs = width("onnxMlp.inputs", n);
            return this;
        }

        /** Widths of the hidden layers (each with a relu), in order, 1..65536 each; none for a linear model. */
        public Builder hidden(int... widths) {
            if (!hiddenSet) {
                hidden.clear();
                hiddenSet = true;
            }
            for (int i = 0; i < widths.length; i++) {
                hidden.add(width("onnxMlp.hidden[" + hidden.size() + "]", widths[i]));
            }
            return this;
        }

        /** Width of the output row, 1..65536. */
        public Builder outputs(int n) {
            this.outputs = width("onnxMlp.outputs", n);
            return this;
        }

        /** The seed of the weights. */
        public Builder seed(long seed) {
            this.seed = seed;
            return this;
        }

        public OnnxMlp build() {
            int[] widths = new int[hidden.size() + 2];
            widths[0] = inputs;
            for (int i = 0; i < hidden.size(); i++) {
                widths[i + 1] = hidden.get(i);
            }
            widths[widths.length - 1] = outputs;
            return new OnnxMlp(widths, seed);
        }

        private static int width(String field, int n) {
            if (n < 1 || n > 65_536) {
                throw new InvalidValueException(field, n, "must be between 1 and 65536");
            }
            return n;
        }
    }
}
