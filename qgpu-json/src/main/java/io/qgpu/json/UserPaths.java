package io.qgpu.json;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Turns a model field name from a validation error ({@code claim[a].gpuCount},
 * {@code gpu[GPU-1].memoryBytes}, {@code topology.position}) into the path and key the user wrote
 * ({@code claims[2].gpus}, {@code nodes[0].gpus[1].memoryGiB}, {@code nodes[0].links[3].b}).
 * The one table of renamed keys is {@link #KEYS}.
 */
final class UserPaths {
    private UserPaths() {
    }

    /** Model field name to the key of the file formats (where they differ). */
    static final Map<String, String> KEYS = Map.of(
            "tenantId", "tenant",
            "gpuCount", "gpus",
            "memoryPerGpuBytes", "memoryBytes",
            "gpuUuid", "gpu",
            "preset", "name",
            "compute", "computeRequest",
            "size", "gpus");

    /** Keys that name an element of an array, tried in this order. */
    private static final List<String> IDS = List.of("uuid", "gpu", "tenant", "name");

    static String resolve(JsonInput in, String base, String selfName, String field, @Nullable Object value) {
        List<String> toks = split(field);
        if (toks.isEmpty()) {
            return base;
        }
        JsonNode ctx = in.at(base);
        String out = base;
        int start = 0;
        String first = name(toks.get(0));
        if (first.equals(selfName)) {
            start = 1;
        } else if (first.equals("gpu") || first.equals("slice")) {
            toks.set(0, first + "s" + bracketed(toks.get(0)));
        } else if (first.equals("topology") || first.equals("link")) {
            return topology(base, ctx, toks, value);
        }
        for (int i = start; i < toks.size(); i++) {
            String tok = toks.get(i);
            String name = rename(name(tok), ctx);
            String key = key(tok);
            JsonNode child = ctx == null ? null : ctx.get(name);
            out = JsonInput.key(out, name);
            ctx = child;
            if (child != null && child.isArray()) {
                int j = key != null ? indexOf(child, key) : i + 1 < toks.size() ? lastWith(child, name(toks.get(i + 1)), value) : -1;
                if (j >= 0) {
                    out = out + "[" + j + "]";
                    ctx = child.get(j);
                }
            }
        }
        return out;
    }

    private static String rename(String name, @Nullable JsonNode ctx) {
        if (name.equals("mustInclude")) {
            // the model keeps both kinds of must-include; the file has mustIncludeUuids or mustIncludeIndices
            return ctx != null && ctx.isObject() && !ctx.has("mustIncludeUuids") ? "mustIncludeIndices" : "mustIncludeUuids";
        }
        String n = KEYS.getOrDefault(name, name);
        if (n.equals("memoryBytes") && ctx != null && ctx.isObject() && ctx.has("memoryGiB") && !ctx.has("memoryBytes")) {
            return "memoryGiB";
        }
        return n;
    }

    /** Topology errors name positions or lanes; find the link the user wrote. */
    private static String topology(String base, @Nullable JsonNode node, List<String> toks, @Nullable Object value) {
        String what = toks.size() > 1 ? name(toks.get(1)) : "";
        JsonNode links = node == null ? null : node.get("links");
        String v = String.valueOf(value);
        if (what.equals("size")) {
            return JsonInput.key(base, "gpus");
        }
        if (what.equals("defaultLink")) {
            return JsonInput.key(base, "defaultLink");
        }
        String linkKey = toks.size() > 1 ? key(toks.get(1)) : null;
        if (what.equals("link") && linkKey != null && links != null) {
            int j = indexOf(links, linkKey);
            return j >= 0 ? JsonInput.key(base, "links") + "[" + j + "].link" : JsonInput.key(base, "links");
        }
        if (what.equals("lanes")) {
            if (node != null && node.has("defaultLink") && node.get("defaultLink").asText().equalsIgnoreCase("NV" + v)) {
                return JsonInput.key(base, "defaultLink");
            }
            int j = links == null ? -1 : lastWithText(links, "link", "NV" + v);
            return j >= 0 ? JsonInput.key(base, "links") + "[" + j + "].link" : base;
        }
        // a position: the first link with that GPU position at a or b
        if (links != null) {
            for (int j = 0; j < links.size(); j++) {
                for (String end : List.of("a", "b")) {
                    JsonNode e = links.get(j).get(end);
                    if (e != null && e.asText().equals(v)) {
                        return JsonInput.key(base, "links") + "[" + j + "]." + end;
                    }
                }
            }
        }
        return links != null ? JsonInput.key(base, "links") : base;
    }

    private static int indexOf(JsonNode array, String key) {
        for (int j = 0; j < array.size(); j++) {
            JsonNode e = array.get(j);
            if (e.isObject()) {
                for (String id : IDS) {
                    if (e.has(id) && e.get(id).isValueNode() && e.get(id).asText().equals(key)) {
                        return j;
                    }
                }
                if (e.has("a") && e.has("b") && key.equals(e.get("a").asText() + "," + e.get("b").asText())) {
                    return j;
                }
            }
        }
        if (!key.isEmpty() && key.chars().allMatch(Character::isDigit) && key.length() < 9 && Integer.parseInt(key) < array.size()) {
            return Integer.parseInt(key);
        }
        return -1;
    }

    private static int lastWith(JsonNode array, String field, @Nullable Object value) {
        return value == null ? -1 : lastWithText(array, field, String.valueOf(value));
    }

    private static int lastWithText(JsonNode array, String field, String text) {
        for (int j = array.size() - 1; j >= 0; j--) {
            JsonNode e = array.get(j).get(field);
            if (e != null && e.isValueNode() && e.asText().equalsIgnoreCase(text)) {
                return j;
            }
        }
        return -1;
    }

    private static String name(String tok) {
        int b = tok.indexOf('[');
        return b < 0 ? tok : tok.substring(0, b);
    }

    /** The key in brackets, or null when there is none. */
    private static @Nullable String key(String tok) {
        int b = tok.indexOf('[');
        return b < 0 || !tok.endsWith("]") ? null : tok.substring(b + 1, tok.length() - 1);
    }

    /** The key with its brackets ("[key]"), or "" when there is none. */
    private static String bracketed(String tok) {
        int b = tok.indexOf('[');
        return b < 0 || !tok.endsWith("]") ? "" : tok.substring(b);
    }

    /** Splits on dots outside brackets. */
    private static List<String> split(String field) {
        List<String> out = new ArrayList<>();
        int depth = 0;
        StringBuilder cur = new StringBuilder();
        for (int i = 0; i < field.length(); i++) {
            char c = field.charAt(i);
            if (c == '[') {
                depth++;
            } else if (c == ']') {
                depth--;
            }
            if (c == '.' && depth == 0) {
                out.add(cur.toString());
                cur.setLength(0);
            } else {
                cur.append(c);
            }
        }
        if (cur.length() > 0) {
            out.add(cur.toString());
        }
        return out;
    }
}
