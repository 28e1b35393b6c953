package io.qgpu.cli.replay;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
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
 * column and value; so does a pod name given twice, and a byte that is not UTF-8 text (the line and the
 * byte).
 *
 * <p>Thread safety: stateless.
 */
public final class TraceCsv {

    /** The most host memory a row may give, in MiB: its bytes must fit a long. */
    static final long MAX_MIB = Long.MAX_VALUE / (1L << 20);

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
            out.add(new TraceNode(name, r.number("cpu_milli", 0, Long.MAX_VALUE), r.number("memory_mib", 0, MAX_MIB),
                    gpus, model));
        });
        return out;
    }

    /** The pod list: {@code name,cpu_milli,memory_mib,num_gpu,gpu_milli} and, when present, {@code gpu_spec,qos}. */
    public static List<TracePod> pods(Path file) throws IOException {
        List<TracePod> out = new ArrayList<>();
        Map<String, Long> lines = new HashMap<>();
        read(file, List.of("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"), List.of("gpu_spec", "qos"), (r) -> {
            String name = r.text("name");
            Long first = lines.putIfAbsent(name, r.line);
            if (first != null) {
                // the arrival order sorts pods by name and the ledger keys them by it: two with one name cannot both be replayed
                throw r.bad("name", name, "is a duplicate pod name (line " + first + " has it too); pod names must be unique");
            }
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
            out.add(new TracePod(name, r.number("cpu_milli", 0, Long.MAX_VALUE),
                    r.number("memory_mib", 0, MAX_MIB), gpus, milli, models, r.optional("qos")));
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

    /**
     * The fields of one line as RFC 4180 has them: separated by commas; a field in double quotes may hold
     * commas, and a doubled quote inside it stands for one quote.
     */
    static String[] fields(Path file, long line, String s) {
        List<String> out = new ArrayList<>();
        StringBuilder cur = new StringBuilder();
        boolean quoted = false;
        boolean wasQuoted = false;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (quoted) {
                if (c == '"' && i + 1 < s.length() && s.charAt(i + 1) == '"') {
                    cur.append('"');
                    i++;
                } else if (c == '"') {
                    quoted = false;
                } else {
                    cur.append(c);
                }
            } else if (c == '"' && cur.toString().isBlank() && !wasQuoted) {
                cur.setLength(0);
                quoted = true;
                wasQuoted = true;
            } else if (c == ',') {
                out.add(cur.toString());
                cur.setLength(0);
                wasQuoted = false;
            } else if (wasQuoted && !Character.isWhitespace(c)) {
                throw new TraceFormatException(file, line, "field " + (out.size() + 1), s,
                        "has text after its closing quote; write a quote inside a quoted field as \"\"");
            } else {
                cur.append(c);
            }
        }
        if (quoted) {
            throw new TraceFormatException(file, line, "field " + (out.size() + 1), s, "opens a quote that the line does not close");
        }
        out.add(cur.toString());
        return out.toArray(new String[0]);
    }

    private static void read(Path file, List<String> required, List<String> optional, RowHandler handler) throws IOException {
        try {
            readText(file, required, optional, handler);
        } catch (CharacterCodingException e) {
            throw notUtf8(file);
        }
    }

    /**
     * The first line of {@code file} that is not UTF-8, found by decoding it line by line (the reader decodes
     * ahead of the line it returns, so the line it failed on is not the line it was on).
     */
    static TraceFormatException notUtf8(Path file) throws IOException {
        byte[] bytes = Files.readAllBytes(file);
        long line = 1;
        int start = 0;
        for (int i = 0; i <= bytes.length; i++) {
            if (i == bytes.length || bytes[i] == '\n') {
                CharsetDecoder d = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT);
                ByteBuffer b = ByteBuffer.wrap(bytes, start, i - start);
                try {
                    d.decode(b);
                } catch (CharacterCodingException e) {
                    int at = b.position();
                    return new TraceFormatException(file, line, "(text)", String.format("0x%02X", bytes[at] & 0xff),
                            "at byte " + (at - start + 1) + " of the line is not UTF-8 text; save the file as UTF-8 (plain ASCII is UTF-8)");
                }
                line++;
                start = i + 1;
            }
        }
        return new TraceFormatException(file, 1, "(text)", "", "is not UTF-8 text; save the file as UTF-8");
    }

    private static void readText(Path file, List<String> required, List<String> optional, RowHandler handler) throws IOException {
        try (BufferedReader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            String header = in.readLine();
            if (header == null) {
                throw new TraceFormatException(file, 1, "(header)", "", "is missing: the file is empty");
            }
            Map<String, Integer> columns = new HashMap<>();
            String[] names = fields(file, 1, header);
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
                String[] fields = fields(file, line, s);
                if (fields.length < width) {
                    throw new TraceFormatException(file, line, names[Math.min(fields.length, names.length - 1)].trim(), s,
                            "row has " + fields.length + " fields, the header asks for at least " + width);
                }
                handler.accept(new Row(file, line, columns, fields));
            }
        }
    }
}
