package io.qgpu.cli.replay;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Reads the trace's node and pod lists (comma separated, one header line naming the columns, in
 * any order; extra columns are ignored). A missing column, a row with too few fields, or a value
 * that is not a number in range fails with a {@link TraceFormatException} naming the file, line,
 * column and value.
 *
 * <p>Thread safety: stateless.
 */
public final class TraceCsv {

    private TraceCsv() {
    }

    /** The node list: {@code sn,cpu_milli,memory_mib,gpu,model}. */
    public static List<TraceNode> nodes(Path file) throws IOException {
        List<TraceNode> out = new ArrayList<>();
        Set<String> names = new java.util.HashSet<>();
        read(file, List.of("sn", "cpu_milli", "memory_mib", "gpu", "model"), List.of(), (r) -> {
            String name = r.text("sn");
            if (!names.add(name)) {
                throw r.bad("sn", name, "is a duplicate node name");
            }
            int gpus = (int) r.number("gpu", 0, 1024);
            String model = r.text("model");
            if (gpus > 0 && model.isEmpty()) {
                throw r.bad("model", model, "must name the GPU model of a node with GPUs");
            }
            out.add(new TraceNode(name, r.number("cpu_milli", 0, Long.MAX_VALUE), r.number("memory_mib", 0, Long.MAX_VALUE),
                    gpus, model));
        });
        return out;
    }

    /** The pod list: {@code name,cpu_milli,memory_mib,num_gpu,gpu_milli} and, when present, {@code gpu_spec,qos}. */
    public static List<TracePod> pods(Path file) throws IOException {
        List<TracePod> out = new ArrayList<>();
        read(file, List.of("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"), List.of("gpu_spec", "qos"), (r) -> {
            int gpus = (int) r.number("num_gpu", 0, 1024);
            int milli = (int) r.number("gpu_milli", 0, 1000);
            if (gpus > 0 && milli == 0) {
                throw r.bad("gpu_milli", "0", "must be 1..1000 for a pod with num_gpu " + gpus);
            }
            if (gpus == 0 && milli != 0) {
                throw r.bad("gpu_milli", Integer.toString(milli), "must be 0 for a pod with num_gpu 0");
            }
            if (milli % 10 != 0) {
                throw r.bad("gpu_milli", Integer.toString(milli), "must be a multiple of 10 (whole percent of a GPU)");
            }
            Set<String> models = new LinkedHashSet<>();
            String spec = r.optional("gpu_spec");
            if (!spec.isEmpty()) {
                for (String m : spec.split("\\|", -1)) {
                    if (m.isBlank()) {
                        throw r.bad("gpu_spec", spec, "has an empty model name between '|'");
                    }
                    models.add(m.trim());
                }
            }
            out.add(new TracePod(r.text("name"), r.number("cpu_milli", 0, Long.MAX_VALUE),
                    r.number("memory_mib", 0, Long.MAX_VALUE), gpus, milli, models, r.optional("qos")));
        });
        return out;
    }

    private interface RowHandler {
        void accept(Row r);
    }

    /** One data row with its header. */
    private static final class Row {
        final Path file;
        final long line;
        final Map<String, Integer> columns;
        final String[] fields;

        Row(Path file, long line, Map<String, Integer> columns, String[] fields) {
            this.file = file;
            this.line = line;
            this.columns = columns;
            this.fields = fields;
        }

        String text(String column) {
            return fields[columns.get(column)].trim();
        }

        String optional(String column) {
            Integer i = columns.get(column);
            return i == null ? "" : fields[i].trim();
        }

        long number(String column, long min, long max) {
            String v = text(column);
            long n;
            try {
                n = Long.parseLong(v);
            } catch (NumberFormatException e) {
                throw bad(column, v, "is not a whole number");
            }
            if (n < min || n > max) {
                throw bad(column, v, "must be between " + min + " and " + max);
            }
            return n;
        }

        TraceFormatException bad(String column, String value, String rule) {
            return new TraceFormatException(file, line, column, value, rule);
        }
    }

    private static void read(Path file, List<String> required, List<String> optional, RowHandler handler) throws IOException {
        try (BufferedReader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            String header = in.readLine();
            if (header == null) {
                throw new TraceFormatException(file, 1, "(header)", "", "is missing: the file is empty");
            }
            Map<String, Integer> columns = new HashMap<>();
            String[] names = header.split(",", -1);
            for (int i = 0; i < names.length; i++) {
                columns.put(names[i].trim().replace("\uFEFF", ""), i);
            }
            for (String c : required) {
                if (!columns.containsKey(c)) {
                    throw new TraceFormatException(file, 1, c, header, "is missing from the header");
                }
            }
            int width = 0;
            for (String c : required) {
                width = Math.max(width, columns.get(c) + 1);
            }
            for (String c : optional) {
                if (columns.containsKey(c)) {
                    width = Math.max(width, columns.get(c) + 1);
                }
            }
            String s;
            long line = 1;
            while ((s = in.readLine()) != null) {
                line++;
                if (s.isBlank()) {
                    continue;
                }
                String[] fields = s.split(",", -1);
                if (fields.length < width) {
                    throw new TraceFormatException(file, line, names[Math.min(fields.length, names.length - 1)].trim(), s,
                            "row has " + fields.length + " fields, the header asks for at least " + width);
                }
                handler.accept(new Row(file, line, columns, fields));
            }
        }
    }
}
