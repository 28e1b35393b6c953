package io.qgpu.kubernetes.extender;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import io.fabric8.kubernetes.api.model.Pod;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The fast path of {@link ExtenderRequests#parseArgs} for the request kube-scheduler sends with
 * {@code nodeCacheCapable: true}: a well-formed {@code ExtenderArgs} with a {@code Pod} object and a
 * {@code NodeNames} array of distinct, non-blank names.
 *
 * <p>It walks the body's top-level object itself, byte by byte, and hands each value to the right
 * reader: the pod straight to fabric8's model (over the pod's bytes only, in one pass: no tree to
 * convert; see below), a value of a key this version does not know to Jackson's parser (checked to be
 * one well-formed value, then left), and the names to
 * a scan of the bytes that finds each name in the given {@link NodeNameTable} by its bytes
 * ({@link NodeNameTable#indexOfPlain}): no token, no character decoding and no string per name; the
 * table's own string stands for it (equal, so the answer is the same), with its position
 * ({@link CandidateNames}), and repeats among those are found by position. Names that need escaping
 * or are not ASCII (never a Kubernetes node name) are read by Jackson's parser instead. On a
 * 500-name request the Jackson parser took about twice as long just to tokenise the body.
 *
 * <p>The pod is read from its bytes into fabric8's {@code Pod} by {@link ExtenderRequests#podReader}
 * (whose parser refuses a key given twice, as the strict tree reader does), and the read must end
 * where the pod's bytes end. Any problem there (a repeated key, a mistyped field, malformed JSON) is
 * not judged by that read: the pod's bytes are read into a tree as the general path reads them, so that
 * the error, if any, is the general path's word for word. So are pods with a number that a tree gives
 * other text for than the body has (a fraction, an exponent or {@code -0}: a tree writes {@code 1.10}
 * as {@code 1.1} and {@code -0} as {@code 0}): a field that takes a number as a string would read
 * differently from a tree. Kubernetes sends no such number in a pod.
 *
 * <p>Anything else (malformed JSON, trailing bytes, a key given twice in any spelling, a key with an
 * escape or outside ASCII, a missing or mistyped field, a blank or repeated name, a {@code Nodes}
 * request) is not judged here: {@link #read} answers {@code null} and the general path reads the body
 * again and reports the problem, so every error message stays the general path's.
 * {@code NamesArgsReaderTest} checks that both paths give the same answer, or the same error, on
 * seeded bodies.
 *
 * <p>For {@code prioritize} after {@code filter}, a names array that is byte for byte the one the
 * filter's reply listed for the same pod ({@link FilteredNames}) is not read again: the filter's names
 * stand for it (the same names at the same positions).
 *
 * <pre>{@code
 * NamesArgsReader.Read r = NamesArgsReader.read(body, strictMapper, table);
 * if (r == null) {
 *     // the general path
 * }
 * }</pre>
 *
 * <p>Thread safety: stateless; safe from any thread.
 */
final class NamesArgsReader {

    /**
     * A request read on the fast path.
     *
     * @param pod       the {@code Pod} in fabric8's model: the one read before from the same bytes ({@link RecentPods})
     *                  or read now from them; null when they were read as a tree ({@code podTree})
     * @param recent    whether {@code pod} was read before ({@link RecentPods}): checked and filed then
     * @param podTree   the {@code Pod} object as sent, when {@code pod} is null
     * @param podStart  where the pod's bytes start in the body
     * @param podLength how many bytes the pod takes
     * @param names     the candidate names, in request order (a {@link CandidateNames})
     */
    record Read(Pod pod, boolean recent, JsonNode podTree, int podStart, int podLength, List<String> names) {
    }

    /** Not this reader's to judge: the general path reads the body. */
    private static final class NotFast extends Exception {
        private static final long serialVersionUID = 1L;
        static final NotFast INSTANCE = new NotFast();

        private NotFast() {
            super(null, null, false, false);
        }
    }

    private NamesArgsReader() {
    }

    /**
     * The pod and names of a well-formed {@code NodeNames} request, or {@code null} for any other body.
     *
     * @param strict the strict mapper of the general path (its parser refuses duplicate keys)
     */
    static Read read(byte[] body, ObjectMapper strict) {
        return read(body, strict, NodeNameTable.EMPTY, null);
    }

    /**
     * As {@link #read(byte[], ObjectMapper)}, giving {@code known}'s own string for every name it holds.
     */
    static Read read(byte[] body, ObjectMapper strict, NodeNameTable known) {
        return read(body, strict, known, null);
    }

    /**
     * As {@link #read(byte[], ObjectMapper, NodeNameTable)}, taking the pod from {@code pods} when its
     * bytes were read before; {@code pods} may be null.
     */
    static Read read(byte[] body, ObjectMapper strict, NodeNameTable known, RecentPods pods) {
        return read(body, strict, known, pods, null);
    }

    /**
     * As {@link #read(byte[], ObjectMapper, NodeNameTable, RecentPods)}, taking the names from
     * {@code filtered} when the array is, byte for byte, the one filed there for the pod taken from
     * {@code pods} with the table {@code known}; {@code filtered} may be null.
     */
    static Read read(byte[] body, ObjectMapper strict, NodeNameTable known, RecentPods pods, FilteredNames filtered) {
        if (body == null || body.length == 0) {
            return null;
        }
        try {
            return new Walk(body, strict, known, pods, filtered).envelope();
        } catch (NotFast | IOException | RuntimeException e) {
            return null;   // the general path reads it again and says what is wrong
        }
    }

    /** One walk over one body. */
    private static final class Walk {
        private final byte[] b;
        private final ObjectMapper strict;
        private final NodeNameTable known;
        private final RecentPods pods;
        private final FilteredNames filtered;
        private int at;
        /** Whether {@link #skipValue} passed a number a tree would give other text for (a fraction, an exponent, -0). */
        private boolean numberText;

        Walk(byte[] body, ObjectMapper strict, NodeNameTable known, RecentPods pods, FilteredNames filtered) {
            this.b = body;
            this.strict = strict;
            this.known = known;
            this.pods = pods;
            this.filtered = filtered;
        }

        /** {@code {"Pod": {...}, "NodeNames": [...]}} with keys in any case and order, and nothing after it. */
        Read envelope() throws NotFast, IOException {
            space();
            expect('{');
            Pod pod = null;
            boolean recent = false;
            JsonNode podTree = null;
            int podStart = 0;
            int podLength = 0;
            List<String> names = null;
            Set<String> lower = new HashSet<>(4);   // the known keys, as matched
            Set<String> keys = new HashSet<>(4);    // every key as spelled (the parser refuses a key given twice)
            space();
            if (peek() != '}') {
                while (true) {
                    String key = key();
                    if (!keys.add(key)) {
                        throw NotFast.INSTANCE;
                    }
                    space();
                    expect(':');
                    space();
                    String k = key.toLowerCase(Locale.ROOT);
                    switch (k) {
                        case "pod" -> {
                            if (!lower.add(k) || peek() != '{') {
                                throw NotFast.INSTANCE;
                            }
                            podStart = at;
                            numberText = false;
                            skipValue();
                            podLength = at - podStart;
                            // bytes read before are the same pod: they were found to be one well-formed value then
                            pod = pods == null ? null : pods.find(b, podStart, podLength);
                            recent = pod != null;
                            if (pod == null && !numberText) {
                                pod = pod(podStart, podLength);
                            }
                            if (pod == null) {
                                podTree = strict.readTree(b, podStart, podLength);   // refuses trailing tokens and repeated keys
                            }
                        }
                        case "nodenames" -> {
                            if (!lower.add(k) || peek() != '[') {
                                throw NotFast.INSTANCE;
                            }
                            // the pod read before (prioritize after filter): the names its filter passed, if these are their bytes
                            FilteredNames.Filed same = recent && filtered != null ? filtered.find(pod, known, b, at) : null;
                            if (same != null) {
                                at += same.array().length;
                                names = same.names();
                            } else {
                                names = names();
                            }
                        }
                        case "nodes" -> {
                            if (!lower.add(k)) {
                                throw NotFast.INSTANCE;
                            }
                            literal("null");
                        }
                        default -> unknownValue();   // keys this version does not know are ignored
                    }
                    space();
                    if (peek() == ',') {
                        at++;
                        space();
                        continue;
                    }
                    break;
                }
            }
            expect('}');
            space();
            if (at != b.length || (pod == null && podTree == null) || names == null) {
                throw NotFast.INSTANCE;
            }
            return new Read(pod, recent, podTree, podStart, podLength, names);
        }

        /**
         * The pod in {@code b[start, start + length)} read straight into fabric8's model, or null when
         * the read finds any problem (the caller reads the bytes as a tree then, which gives the error).
         */
        private Pod pod(int start, int length) {
            ObjectReader reader = ExtenderRequests.podReader();
            try (JsonParser p = reader.createParser(b, start, length)) {
                Pod pod = reader.readValue(p);
                return p.nextToken() == null ? pod : null;   // nothing after the pod's object
            } catch (IOException | RuntimeException e) {
                return null;
            }
        }

        /** A key of plain ASCII (no escape), the walk after its closing quote. */
        private String key() throws NotFast {
            expect('"');
            int from = at;
            while (true) {
                byte c = byteAt(at);
                if (c == '"') {
                    break;
                }
                if (c < 0x20 || c == '\\') {   // an escape, a control character, or a byte of a non-ASCII character
                    throw NotFast.INSTANCE;
                }
                at++;
            }
            String key = new String(b, from, at - from, StandardCharsets.ISO_8859_1);
            at++;
            return key;
        }

        /**
         * The names array (the walk on its {@code [}), the walk after its {@code ]}; a blank or repeated
         * name is not this reader's to judge.
         */
        private List<String> names() throws NotFast, IOException {
            int start = at;
            Collected out = new Collected(known, b.length - start);   // the array and what follows it
            at++;
            space();
            if (peek() == ']') {
                at++;
                return out.list();
            }
            while (true) {
                if (peek() != '"') {
                    throw NotFast.INSTANCE;
                }
                int from = ++at;
                int hash = 0;
                byte c;
                while ((c = byteAt(at)) != '"') {
                    if (c < 0x20 || c == '\\') {   // an escape, a control character or a non-ASCII character
                        at = start;
                        return parsed();
                    }
                    hash = 31 * hash + c;
                    at++;
                }
                int length = at - from;
                at++;
                int p = known.indexOfPlain(b, from, length, hash);
                if (!(p >= 0 ? out.known(p) : out.other(new String(b, from, length, StandardCharsets.ISO_8859_1)))) {
                    throw NotFast.INSTANCE;
                }
                space();
                byte next = byteAt(at++);
                if (next == ']') {
                    return out.list();
                }
                if (next != ',') {
                    throw NotFast.INSTANCE;
                }
                space();
            }
        }

        /** The names array (the walk on its {@code [}) read by Jackson's parser, for names with escapes or outside ASCII. */
        private List<String> parsed() throws NotFast, IOException {
            int start = at;
            skipValue();
            try (JsonParser p = strict.createParser(b, start, at - start)) {
                if (p.nextToken() != JsonToken.START_ARRAY) {
                    throw NotFast.INSTANCE;
                }
                List<String> names = namesOf(p, known, at - start);
                if (names == null || p.nextToken() != null) {
                    throw NotFast.INSTANCE;
                }
                return names;
            }
        }

        /** A value of a key this version does not know: one well-formed JSON value, as the parser reads it. */
        private void unknownValue() throws NotFast, IOException {
            int start = at;
            skipValue();
            try (JsonParser p = strict.createParser(b, start, at - start)) {
                if (p.nextToken() == null) {
                    throw NotFast.INSTANCE;
                }
                p.skipChildren();
                if (p.nextToken() != null) {
                    throw NotFast.INSTANCE;
                }
            }
        }

        /**
         * Moves the walk past the value it is on: to the bracket that closes an object or array (counting
         * brackets outside strings), past a string, or to the end of a number or literal. It does not
         * check the value; on a well-formed value it ends where the value ends, and the caller has the
         * value's bytes checked by Jackson.
         */
        private void skipValue() throws NotFast {
            byte c = byteAt(at);
            if (c == '{' || c == '[') {
                // read alone, a value is one level less deep than in the body: one that reaches the
                // parser's limit of nesting with the envelope is left to the general path, which refuses it
                int limit = strict.getFactory().streamReadConstraints().getMaxNestingDepth() - 1;
                int depth = 0;
                byte before = 0;
                do {
                    c = byteAt(at++);
                    if (c == '"') {
                        skipString();
                    } else if (c == '{' || c == '[') {
                        if (++depth >= limit) {
                            throw NotFast.INSTANCE;
                        }
                    } else if (c == '}' || c == ']') {
                        depth--;
                    } else if (c == '.' || ((c == 'e' || c == 'E') && before >= '0' && before <= '9')
                            || (c == '-' && at < b.length && b[at] == '0')) {
                        numberText = true;   // outside strings: a fraction, an exponent, or -0
                    }
                    before = c;
                } while (depth > 0);
            } else if (c == '"') {
                at++;
                skipString();
            } else {
                while (at < b.length && (c = b[at]) != ',' && c != '}' && c != ']' && c != ' ' && c != '\t' && c != '\n'
                        && c != '\r') {
                    at++;
                }
            }
        }

        /** The walk just after an opening quote: moves it past the closing one. */
        private void skipString() throws NotFast {
            byte c;
            while ((c = byteAt(at++)) != '"') {
                if (c == '\\') {
                    at++;
                }
            }
        }

        private void literal(String word) throws NotFast {
            for (int k = 0; k < word.length(); k++) {
                if (byteAt(at++) != word.charAt(k)) {
                    throw NotFast.INSTANCE;
                }
            }
            if (at < b.length) {
                byte c = b[at];
                if (c != ',' && c != '}' && c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                    throw NotFast.INSTANCE;
                }
            }
        }

        /** JSON's white space: space, tab, line feed, carriage return. */
        private void space() {
            while (at < b.length) {
                byte c = b[at];
                if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                    return;
                }
                at++;
            }
        }

        private void expect(char c) throws NotFast {
            if (byteAt(at) != c) {
                throw NotFast.INSTANCE;
            }
            at++;
        }

        private byte peek() throws NotFast {
            return byteAt(at);
        }

        private byte byteAt(int i) throws NotFast {
            if (i >= b.length) {
                throw NotFast.INSTANCE;
            }
            return b[i];
        }
    }

    /**
     * The array's names (the parser on its start), or {@code null} if one is not a distinct non-blank
     * string: a {@link CandidateNames} with each name's position in {@code known}.
     */
    private static List<String> namesOf(JsonParser p, NodeNameTable known, int bytes) throws IOException {
        Collected out = new Collected(known, bytes);
        JsonToken t;
        while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
            if (t != JsonToken.VALUE_STRING) {
                return null;
            }
            int at = known.indexOf(p.getTextCharacters(), p.getTextOffset(), p.getTextLength());
            if (!(at >= 0 ? out.known(at) : out.other(p.getText()))) {
                return null;
            }
        }
        return out.list();
    }

    /**
     * The names of one array as they are read, each with its position in the table (-1 for the
     * others), into arrays sized from the bytes they came in (no list grown name by name, no copy
     * afterwards); a repeated or blank name is refused. Repeats among the table's names are found by
     * position. The array of names is made only for a name the table does not hold (the table's own
     * string stands for the others).
     */
    private static final class Collected {
        private final NodeNameTable table;
        private String[] names;      // null until a name the table does not hold
        private int[] positions;
        private int size;
        private long[] seenKnown;    // positions in the table already named
        private Set<String> seen;    // the other names

        /**
         * @param bytes how many bytes the names came in: a node name and its quotes and comma take 10-20 as
         *              a rule, and the array is sized for names of 8 ({@code "node-7",}) so as not to grow
         */
        Collected(NodeNameTable table, int bytes) {
            this.table = table;
            this.positions = new int[Math.max(16, Math.min(bytes / 8 + 16, 1 << 16))];
        }

        /** Adds the table's name at {@code position}; false if it was named before. */
        boolean known(int position) {
            if (seenKnown == null) {
                seenKnown = new long[(table.size() + 63) >>> 6];
            }
            long bit = 1L << position;
            if ((seenKnown[position >>> 6] & bit) != 0) {
                return false;
            }
            seenKnown[position >>> 6] |= bit;
            room();
            positions[size++] = position;   // the table's name stands for it (CandidateNames.get)
            return true;
        }

        /** Adds a name the table does not hold; false if it is blank or was named before. */
        boolean other(String name) {
            if (seen == null) {
                seen = new HashSet<>();
            }
            if (name.isBlank() || !seen.add(name)) {
                return false;
            }
            room();
            if (names == null) {
                names = new String[positions.length];
            }
            positions[size] = -1;
            names[size++] = name;
            return true;
        }

        private void room() {
            if (size == positions.length) {
                positions = Arrays.copyOf(positions, size * 2);
                if (names != null) {
                    names = Arrays.copyOf(names, size * 2);
                }
            }
        }

        List<String> list() {
            return new CandidateNames(names, positions, size, table);
        }
    }
}
