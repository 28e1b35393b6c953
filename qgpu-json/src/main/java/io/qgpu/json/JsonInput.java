package io.qgpu.json;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonStreamContext;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.exc.InvalidTypeIdException;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import io.qgpu.api.InvalidValueException;
import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.jspecify.annotations.Nullable;

/**
 * One JSON input (a file, or a string with a label) read strictly, with the positions of its keys,
 * so that every error about it names the source, the JSON path and the key as the user wrote them,
 * the value as written, and the line and column. Binding refuses unknown keys, fractions where a
 * whole number is meant, strings where numbers are meant, duplicate keys and trailing content.
 *
 * <pre>{@code
 * JsonInput in = JsonInput.read(Path.of("claims.json"), "claims");  // "claims" names the top-level array in paths
 * List<Claim> claims = QgpuJson.readClaims(in);
 * // or a format of your own, one record per JSON object:
 * record Op(String op, String tenant) { }
 * List<Op> ops = in.bind("", new TypeReference<List<Op>>() { });
 * throw in.error("claims[2].gpus", "must be at least 1");  // claims.json: claims[2].gpus = 0: must be at least 1 (line 9, column 5)
 * }</pre>
 *
 * <p>Paths are written {@code key.key[index]}; a key that is not a plain word is written
 * {@code ["nvidia.com/gpu"]}. The root is named by {@code rootName} (for a top-level array such as
 * {@code claims[2]}) or is empty (for a top-level object: {@code nodes[0].name}).
 *
 * <p>Thread safety: immutable after construction; safe from any thread.
 */
public final class JsonInput {

    private final String source;
    private final String rootName;
    private final JsonNode root;
    private final Map<String, int[]> positions;
    /** Every number as written ({@code 1.6e1}, not {@code 16.0}), by JSON pointer: messages show these. */
    private final Map<String, String> numbers;

    private JsonInput(String source, String rootName, JsonNode root, Map<String, int[]> positions, Map<String, String> numbers) {
        this.source = source;
        this.rootName = rootName;
        this.root = root;
        this.positions = positions;
        this.numbers = numbers;
    }

    /**
     * Reads a file. A missing file, a directory, an unreadable or non-UTF-8 file and an empty file
     * each get their own message naming the path.
     *
     * @param rootName how paths name the top-level value: {@code "claims"} for an array of claims, {@code ""} for an object
     */
    public static JsonInput read(Path file, String rootName) {
        String label = file.toString();
        if (Files.isDirectory(file)) {
            throw new QgpuJsonException(label, "", null, "is a directory, not a JSON file", -1, -1, null);
        }
        if (!Files.exists(file)) {
            throw new QgpuJsonException(label, "", null, "no such file", -1, -1, null);
        }
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (CharacterCodingException e) {
            throw new QgpuJsonException(label, "", null, "is not UTF-8 text", -1, -1, e);
        } catch (IOException e) {
            throw new QgpuJsonException(label, "", null, "cannot be read: " + e.getClass().getSimpleName()
                    + (e.getMessage() == null ? "" : " " + e.getMessage()), -1, -1, e);
        }
        return parse(label, text, rootName);
    }

    /**
     * Parses JSON text.
     *
     * @param source   label for messages (a file name); empty for none
     * @param json     the text
     * @param rootName how paths name the top-level value (see {@link #read})
     */
    public static JsonInput parse(String source, String json, String rootName) {
        String label = source == null ? "" : source;
        if (json == null) {
            throw new InvalidValueException("json", null, "must not be null");
        }
        if (json.isBlank()) {
            throw new QgpuJsonException(label, "", null, label.isEmpty() ? "the JSON text is empty" : "is empty", -1, -1, null);
        }
        ObjectMapper m = QgpuJson.strictMapper();
        JsonNode tree;
        try {
            tree = m.readTree(json);
        } catch (JsonProcessingException e) {
            JsonLocation loc = e.getLocation();
            throw new QgpuJsonException(label, pathOf(rootName, e), null, "is not valid JSON: " + Problems.syntax(e),
                    loc == null ? -1 : loc.getLineNr(), loc == null ? -1 : loc.getColumnNr(), null);
        }
        if (tree == null || tree.isMissingNode() || tree.isNull()) {
            throw new QgpuJsonException(label, "", null, "holds no JSON value (null)", -1, -1, null);
        }
        Map<String, String> numbers = new HashMap<>();
        return new JsonInput(label, rootName == null ? "" : rootName, tree, positions(m, json, numbers), numbers);
    }

    /**
     * A parser's or binder's error in words, as this class's own errors say it: no parser class names,
     * no {@code enable ... to allow}, ranges stated. For readers of JSON of their own (the scheduler
     * extender's requests).
     */
    public static String problem(com.fasterxml.jackson.core.JsonProcessingException e) {
        String m = e.getOriginalMessage() == null ? "" : e.getOriginalMessage();
        if (m.startsWith("Duplicate field") || m.startsWith("Trailing token") || !(e instanceof JsonMappingException mapping)) {
            return Problems.syntax(e);
        }
        return Problems.mapping(mapping);
    }

    /** The label given for messages (a file name), or empty. */
    public String source() {
        return source;
    }

    /** How paths name the top-level value ({@code "claims"} for a claims file), or empty. */
    public String rootName() {
        return rootName;
    }

    /** The whole document as a tree. */
    public JsonNode root() {
        return root;
    }

    /** The value at a path, or {@code null} when the input has nothing there. */
    public @Nullable JsonNode at(String path) {
        JsonNode n = root;
        for (Object seg : segments(path)) {
            if (n == null) {
                return null;
            }
            n = seg instanceof Integer i ? (n.isArray() ? n.get(i) : null) : n.get((String) seg);
        }
        return n;
    }

    /** Binds the value at {@code path} to a type, strictly; errors name the path inside the input. */
    public <T> T bind(String path, Class<T> type) {
        // the reader was made for type, so what it read is a T (Class.cast would refuse a primitive's box)
        @SuppressWarnings("unchecked")
        T value = (T) bind(path, QgpuJson.strictMapper().constructType(type));
        return value;
    }

    /** Binds the value at {@code path} to a generic type, strictly. */
    public <T> T bind(String path, TypeReference<T> type) {
        // the reader was made for type, so what it read is a T (its erasure is all a cast could check)
        @SuppressWarnings("unchecked")
        T value = (T) bind(path, QgpuJson.strictMapper().constructType(type));
        return value;
    }

    /** The value at {@code path} read as {@code type}; never null. */
    private Object bind(String path, JavaType type) {
        JsonNode n = at(path);
        if (n == null || n.isNull()) {
            throw error(path, "is required");
        }
        try {
            Object value = QgpuJson.strictMapper().readerFor(type).readValue(n);
            if (value == null) {
                throw error(path, "is required");
            }
            return value;
        } catch (InvalidTypeIdException e) {
            // a "type" (or other kind key) that names no known kind, or is missing
            java.util.regex.Matcher prop = java.util.regex.Pattern.compile("type id property '([^']+)'").matcher(e.getOriginalMessage());
            String full = key(join(path, e.getPath()), prop.find() ? prop.group(1) : "type");
            java.util.regex.Matcher known = java.util.regex.Pattern.compile("known type ids = \\[([^\\]]*)\\]")
                    .matcher(e.getOriginalMessage());
            String kinds = known.find() ? known.group(1) : "";
            throw error(full, e.getTypeId() == null ? "is required: one of " + kinds : "must be one of " + kinds, e);
        } catch (JsonMappingException e) {
            String full = join(path, e.getPath());
            throw e instanceof UnrecognizedPropertyException u
                    ? error(full, null, "unknown key; the keys allowed here are " + known(u.getKnownPropertyIds()), e)
                    : error(full, Problems.mapping(e), e);
        } catch (JsonProcessingException e) {
            // numbers out of range and the like: the parser knows where it was
            String at = path;
            if (e.getProcessor() instanceof JsonParser p) {
                at = join(path, p.getParsingContext());
            }
            throw error(at, Problems.syntax(e), e);
        } catch (IOException e) {
            throw new QgpuJsonException(source, path, null, "cannot be read: " + e.getMessage(), -1, -1, e);
        }
    }

    /** An error at a path; the value shown is the one written in the input there. */
    public QgpuJsonException error(String path, String rule) {
        return error(path, rule, null);
    }

    /** An error at a path with its cause; the value shown is the one written in the input there. */
    public QgpuJsonException error(String path, String rule, @Nullable Throwable cause) {
        JsonNode v = at(path);
        return error(path, v == null ? null : shown(path, v), rule, cause);
    }

    private QgpuJsonException error(String path, @Nullable String value, String rule, @Nullable Throwable cause) {
        int[] pos = position(path);
        return new QgpuJsonException(source, path, value, rule, pos[0], pos[1], cause);
    }

    /**
     * Restates a model validation error raised while converting the value at {@code path} in the
     * user's terms: the model's field name becomes the key the user wrote, a GPU named by UUID or a
     * link named by its GPU pair becomes its index in the file, and the value is the one written.
     *
     * @param path     where the converted value sits, for example {@code claims[2]}
     * @param selfName the model's name for that value ({@code claim}, {@code node}, {@code placement}, {@code rules})
     */
    public QgpuJsonException translate(String path, String selfName, InvalidValueException e) {
        String at = UserPaths.resolve(this, path, selfName, e.field(), e.value());
        JsonNode written = at(at);
        String value = written != null ? shown(at, written) : e.value() == null ? null : String.valueOf(e.value());
        return error(at, value, e.rule(), e);
    }

    // ------------------------------------------------------------ positions and paths

    private int[] position(String path) {
        List<Object> segs = new ArrayList<>(segments(path));
        while (true) {
            int[] p = positions.get(pointer(segs));
            if (p != null) {
                return p;
            }
            if (segs.isEmpty()) {
                return new int[] {-1, -1};
            }
            segs.remove(segs.size() - 1);
        }
    }

    /** Where every key and every array element starts: JSON pointer to line and column. */
    private static Map<String, int[]> positions(ObjectMapper m, String json, Map<String, String> numbers) {
        Map<String, int[]> out = new HashMap<>();
        try (JsonParser p = m.getFactory().createParser(json)) {
            JsonToken t;
            while ((t = p.nextToken()) != null) {
                if (t == JsonToken.END_ARRAY || t == JsonToken.END_OBJECT) {
                    continue;
                }
                JsonStreamContext ctx = p.getParsingContext();
                if (t == JsonToken.START_ARRAY || t == JsonToken.START_OBJECT) {
                    ctx = ctx.getParent();
                }
                if (ctx == null) {
                    continue;
                }
                JsonLocation l = p.currentTokenLocation();
                out.putIfAbsent(ctx.pathAsPointer().toString(), new int[] {l.getLineNr(), l.getColumnNr()});
                if (t == JsonToken.VALUE_NUMBER_INT || t == JsonToken.VALUE_NUMBER_FLOAT) {
                    numbers.putIfAbsent(ctx.pathAsPointer().toString(), p.getText());
                }
            }
        } catch (IOException e) {
            // already parsed once: cannot happen; positions are a help, not a requirement
            return out;
        }
        return out;
    }

    List<Object> segments(String path) {
        String p = path == null ? "" : path;
        if (!rootName.isEmpty() && p.startsWith(rootName)) {
            p = p.substring(rootName.length());
        }
        List<Object> out = new ArrayList<>();
        int i = 0;
        while (i < p.length()) {
            char c = p.charAt(i);
            if (c == '.') {
                i++;
            } else if (c == '[' && i + 1 < p.length() && p.charAt(i + 1) == '"') {
                int end = p.indexOf("\"]", i + 2);
                end = end < 0 ? p.length() : end;
                out.add(p.substring(i + 2, end));
                i = Math.min(p.length(), end + 2);
            } else if (c == '[') {
                int end = p.indexOf(']', i);
                end = end < 0 ? p.length() : end;
                String in = p.substring(i + 1, end);
                out.add(in.chars().allMatch(Character::isDigit) && !in.isEmpty() ? (Object) Integer.valueOf(in) : in);
                i = end + 1;
            } else {
                int end = i;
                while (end < p.length() && p.charAt(end) != '.' && p.charAt(end) != '[') {
                    end++;
                }
                out.add(p.substring(i, end));
                i = end;
            }
        }
        return out;
    }

    private static String pointer(List<Object> segs) {
        StringBuilder sb = new StringBuilder();
        for (Object s : segs) {
            sb.append('/').append(s.toString().replace("~", "~0").replace("/", "~1"));
        }
        return sb.toString();
    }

    /** Appends a key to a path the way paths are written. */
    static String key(String path, String key) {
        boolean word = !key.isEmpty() && key.chars().allMatch(c -> Character.isLetterOrDigit(c) || c == '_' || c == '-');
        if (!word) {
            return path + "[\"" + key + "\"]";
        }
        return path.isEmpty() ? key : path + "." + key;
    }

    private String join(String path, List<JsonMappingException.Reference> refs) {
        return join(rootName, path, refs);
    }

    private static String join(String rootName, String path, List<JsonMappingException.Reference> refs) {
        String out = path.isEmpty() ? rootName : path;
        for (JsonMappingException.Reference r : refs) {
            out = r.getFieldName() != null ? key(out, r.getFieldName()) : r.getIndex() >= 0 ? out + "[" + r.getIndex() + "]" : out;
        }
        return out;
    }

    private String join(String path, JsonStreamContext ctx) {
        List<String> parts = new ArrayList<>();
        for (JsonStreamContext c = ctx; c != null && !c.inRoot(); c = c.getParent()) {
            parts.add(0, c.inArray() ? "[" + c.getCurrentIndex() + "]" : c.getCurrentName() == null ? "" : c.getCurrentName());
        }
        String out = path.isEmpty() ? rootName : path;
        for (String s : parts) {
            out = s.startsWith("[") ? out + s : s.isEmpty() ? out : key(out, s);
        }
        return out;
    }

    private static String pathOf(String rootName, JsonProcessingException e) {
        return e instanceof JsonMappingException m && !m.getPath().isEmpty()
                ? join(rootName == null ? "" : rootName, "", m.getPath()) : "";
    }

    private static String known(Collection<Object> ids) {
        return String.join(", ", new TreeSet<>(ids.stream().map(String::valueOf).toList()));
    }

    /** The value at {@code path} as the input wrote it: a number's own text, else {@link #render}. */
    private @Nullable String shown(String path, JsonNode v) {
        if (v.isNumber()) {
            String text = numbers.get(pointer(segments(path)));
            if (text != null) {
                return text.length() <= 60 ? text : text.substring(0, 57) + "...";
            }
        }
        return render(v);
    }

    /** A value as written in JSON, shortened when long; null for an array or object too long to show. */
    static @Nullable String render(JsonNode v) {
        String s = v.toString();
        if (v.isContainerNode()) {
            return s.length() <= 20 ? s : null;
        }
        return s.length() <= 60 ? s : s.substring(0, 57) + "...";
    }
}
