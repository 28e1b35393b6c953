package io.qgpu.kubernetes.extender;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The fast path of {@link ExtenderRequests#parseArgs} for the request kube-scheduler sends with
 * {@code nodeCacheCapable: true}: a well-formed {@code ExtenderArgs} with a {@code Pod} object and a
 * {@code NodeNames} array of distinct, non-blank names. It reads the body with the streaming parser
 * (the names straight into strings, only the pod as a tree), where the general path builds a tree of
 * the whole body first; the names of a 500-candidate request were most of the tree. A name that the
 * given {@link NodeNameTable} holds is not copied out of the parser at all: the table's own string
 * stands for it (equal, so the answer is the same), and repeats among those are found by position.
 *
 * <p>Anything else (malformed JSON, trailing tokens, a key given twice in any spelling, a missing or
 * mistyped field, a blank or repeated name, a {@code Nodes} request) is not judged here: {@link #read}
 * answers {@code null} and the general path reads the body again and reports the problem, so every
 * error message stays the general path's. {@code NamesArgsReaderTest} checks that both paths give the
 * same answer, or the same error, on seeded bodies.
 *
 * <pre>{@code
 * NamesArgsReader.Read r = NamesArgsReader.read(body, strictMapper);
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
     * @param pod   the {@code Pod} object as sent
     * @param names the candidate names, in request order
     */
    record Read(JsonNode pod, List<String> names) {
    }

    private NamesArgsReader() {
    }

    /**
     * The pod and names of a well-formed {@code NodeNames} request, or {@code null} for any other body.
     *
     * @param strict the strict mapper of the general path (its parser refuses duplicate keys)
     */
    static Read read(byte[] body, ObjectMapper strict) {
        return read(body, strict, NodeNameTable.EMPTY);
    }

    /**
     * As {@link #read(byte[], ObjectMapper)}, giving {@code known}'s own string for every name it holds.
     */
    static Read read(byte[] body, ObjectMapper strict, NodeNameTable known) {
        if (body == null || body.length == 0) {
            return null;
        }
        try (JsonParser p = strict.createParser(body)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return null;
            }
            JsonNode pod = null;
            List<String> names = null;
            Set<String> keys = new HashSet<>(4);
            JsonToken t;
            while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
                String key = p.currentName().toLowerCase(Locale.ROOT);
                JsonToken value = p.nextToken();
                switch (key) {
                    case "pod" -> {
                        if (!keys.add(key) || value != JsonToken.START_OBJECT) {
                            return null;
                        }
                        pod = ExtenderRequests.strictInner().readTree(p);
                    }
                    case "nodenames" -> {
                        if (!keys.add(key) || value != JsonToken.START_ARRAY) {
                            return null;
                        }
                        names = names(p, known);
                        if (names == null) {
                            return null;
                        }
                    }
                    case "nodes" -> {
                        if (!keys.add(key) || value != JsonToken.VALUE_NULL) {
                            return null;
                        }
                    }
                    default -> p.skipChildren();   // keys this version does not know are ignored
                }
            }
            if (t != JsonToken.END_OBJECT || p.nextToken() != null || pod == null || names == null) {
                return null;
            }
            return new Read(pod, names);
        } catch (IOException | RuntimeException e) {
            return null;   // the general path reads it again and says what is wrong
        }
    }

    /** The array's names (the parser on its start), or {@code null} if one is not a distinct non-blank string. */
    private static List<String> names(JsonParser p, NodeNameTable known) throws IOException {
        List<String> out = new ArrayList<>();
        long[] seenKnown = null;   // positions in known already named
        Set<String> seen = null;   // the other names
        JsonToken t;
        while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
            if (t != JsonToken.VALUE_STRING) {
                return null;
            }
            int at = known.indexOf(p.getTextCharacters(), p.getTextOffset(), p.getTextLength());
            if (at >= 0) {
                if (seenKnown == null) {
                    seenKnown = new long[(known.size() + 63) >>> 6];
                }
                long bit = 1L << at;
                if ((seenKnown[at >>> 6] & bit) != 0) {
                    return null;
                }
                seenKnown[at >>> 6] |= bit;
                out.add(known.name(at));
                continue;
            }
            String name = p.getText();
            if (seen == null) {
                seen = new HashSet<>();
            }
            if (name.isBlank() || !seen.add(name)) {
                return null;
            }
            out.add(name);
        }
        return out;
    }
}
