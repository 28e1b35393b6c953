package io.qgpu.kubernetes.allocator;

import io.qgpu.api.GpuDevice;
import io.qgpu.kubernetes.node.dra.DraNames;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The CEL device selectors the allocator understands, from a claim's requests and from the DeviceClass they name.
 * A selector is one comparison; anything else is refused with the reason, never ignored (a selector the allocator
 * skipped would place a claim on devices its author ruled out):
 * <ul>
 *   <li>{@code device.driver == "gpu.qgpu.io"}: true of every qgpu device (the DeviceClass's own selector); any other
 *       driver selects none of them;</li>
 *   <li>{@code device.attributes["gpu.qgpu.io"].A == V} and {@code != V} for the attributes {@code productName}
 *       (a string: the GPU model), {@code uuid} (a string), {@code index} and {@code numaNode} (integers). {@code V}
 *       is a literal: a double-quoted string or a whole number;</li>
 *   <li>{@code device.attributes["gpu.qgpu.io"].productName in ["A100", "H100"]} (and {@code uuid in [...]}): one of
 *       the strings listed (one list per attribute).</li>
 * </ul>
 * Several selectors of one request all apply (CEL's selectors are ANDed). A claim's requests must all carry the same
 * selectors, as qgpu gives a claim one set of GPU selectors.
 *
 * <p>Thread safety: immutable.
 *
 * @param includeModels the models a GPU must be one of (empty: any)
 * @param excludeModels the models a GPU must not be
 * @param includeUuids  the UUIDs a GPU must be one of (empty: any)
 * @param excludeUuids  the UUIDs a GPU must not be
 * @param predicates    the other comparisons ({@code index}, {@code numaNode}), which the allocator evaluates over the
 *                      published GPUs when it decides
 * @param expressions   the expressions as written, in order, for messages and equality across requests
 */
record DeviceSelectors(Set<String> includeModels, Set<String> excludeModels, Set<String> includeUuids,
                       Set<String> excludeUuids, List<Predicate<GpuDevice>> predicates, List<String> expressions) {
    /** No selector. */
    static final DeviceSelectors NONE = new DeviceSelectors(Set.of(), Set.of(), Set.of(), Set.of(), List.of(), List.of());

    private static final Pattern DRIVER = Pattern.compile("^\\s*device\\.driver\\s*==\\s*\"([^\"]*)\"\\s*$");
    private static final Pattern IN = Pattern.compile(
            "^\\s*device\\.attributes\\[\"([^\"]+)\"\\]\\.([A-Za-z][A-Za-z0-9]*)\\s+in\\s*\\[\\s*(\"[^\"]*\"(?:\\s*,\\s*\"[^\"]*\")*)\\s*\\]\\s*$");
    private static final Pattern ATTRIBUTE = Pattern.compile(
            "^\\s*device\\.attributes\\[\"([^\"]+)\"\\]\\.([A-Za-z][A-Za-z0-9]*)\\s*(==|!=)\\s*(\"[^\"]*\"|-?[0-9]+)\\s*$");

    /** Why a selector cannot be honoured; the message names where it is and what it says. */
    static final class UnsupportedSelector extends Exception {
        private static final long serialVersionUID = 1L;

        UnsupportedSelector(String message) {
            super(message);
        }
    }

    /**
     * The selectors of these expressions.
     *
     * @param expressions the CEL expressions
     * @param at          where each is, for messages: {@code at.get(i)} belongs to {@code expressions.get(i)}
     *                    ({@code spec.devices.requests[0].exactly.selectors[1].cel.expression})
     * @throws UnsupportedSelector naming the first expression the allocator cannot honour
     */
    static DeviceSelectors parse(List<String> expressions, List<String> at) throws UnsupportedSelector {
        Set<String> inModels = new LinkedHashSet<>();
        Set<String> outModels = new LinkedHashSet<>();
        Set<String> inUuids = new LinkedHashSet<>();
        Set<String> outUuids = new LinkedHashSet<>();
        List<Predicate<GpuDevice>> predicates = new ArrayList<>();
        boolean restrictModels = false;
        boolean restrictUuids = false;
        for (int i = 0; i < expressions.size(); i++) {
            String e = expressions.get(i);
            String where = at.get(i) + " = " + e + ": ";
            if (e == null || e.isBlank()) {
                throw new UnsupportedSelector(at.get(i) + " is empty");
            }
            Matcher d = DRIVER.matcher(e);
            if (d.matches()) {
                if (!DraNames.DRIVER.equals(d.group(1))) {
                    throw new UnsupportedSelector(where + "selects the devices of driver " + d.group(1) + ", never qgpu's ("
                            + DraNames.DRIVER + ")");
                }
                continue;
            }
            Matcher in = IN.matcher(e);
            if (in.matches()) {
                if (!DraNames.DRIVER.equals(in.group(1))) {
                    throw new UnsupportedSelector(where + "names the attributes of domain " + in.group(1) + "; qgpu's devices have "
                            + DraNames.DRIVER + "'s");
                }
                List<String> values = new ArrayList<>();
                Matcher q = Pattern.compile("\"([^\"]*)\"").matcher(in.group(3));
                while (q.find()) {
                    values.add(q.group(1));
                }
                switch (in.group(2)) {
                    case "productName" -> restrictModels = restrict(inModels, restrictModels, values, where);
                    case "uuid" -> restrictUuids = restrict(inUuids, restrictUuids, values, where);
                    default -> throw new UnsupportedSelector(where + "'in' works on the string attributes productName and uuid");
                }
                continue;
            }
            Matcher a = ATTRIBUTE.matcher(e);
            if (!a.matches()) {
                throw new UnsupportedSelector(where + "not a form the qgpu allocator understands (device.driver == \""
                        + DraNames.DRIVER + "\", or device.attributes[\"" + DraNames.DRIVER
                        + "\"].<productName|uuid|index|numaNode> == or != a literal, or <productName|uuid> in [\"a\", \"b\"])");
            }
            if (!DraNames.DRIVER.equals(a.group(1))) {
                throw new UnsupportedSelector(where + "names the attributes of domain " + a.group(1) + "; qgpu's devices have "
                        + DraNames.DRIVER + "'s");
            }
            boolean eq = a.group(3).equals("==");
            String literal = a.group(4);
            boolean quoted = literal.startsWith("\"");
            String attr = a.group(2);
            switch (attr) {
                case "productName", "uuid" -> {
                    if (!quoted) {
                        throw new UnsupportedSelector(where + attr + " is a string: compare it with a quoted value");
                    }
                    String v = literal.substring(1, literal.length() - 1);
                    if (!eq) {
                        (attr.equals("productName") ? outModels : outUuids).add(v);
                    } else if (attr.equals("productName")) {
                        restrictModels = restrict(inModels, restrictModels, List.of(v), where);
                    } else {
                        restrictUuids = restrict(inUuids, restrictUuids, List.of(v), where);
                    }
                }
                case "index", "numaNode" -> {
                    if (quoted) {
                        throw new UnsupportedSelector(where + attr + " is an integer: compare it with a whole number");
                    }
                    long v;
                    try {
                        v = Long.parseLong(literal);
                    } catch (NumberFormatException x) {
                        throw new UnsupportedSelector(where + literal + " is not a whole number that fits in 64 bits");
                    }
                    boolean index = attr.equals("index");
                    Predicate<GpuDevice> p = g -> (index ? g.index() : g.numaNode()) == v;
                    predicates.add(eq ? p : p.negate());
                }
                default -> throw new UnsupportedSelector(where + "qgpu's devices have no attribute " + attr
                        + " the allocator can select on (productName, uuid, index, numaNode)");
            }
        }
        if (expressions.isEmpty()) {
            return NONE;
        }
        return new DeviceSelectors(Set.copyOf(inModels), Set.copyOf(outModels), Set.copyOf(inUuids), Set.copyOf(outUuids),
                List.copyOf(predicates), List.copyOf(expressions));
    }

    /**
     * Narrows the allowed values of one attribute (selectors are ANDed: a second condition keeps what both allow).
     *
     * @return true: the set is a restriction now
     * @throws UnsupportedSelector when nothing is left, which no device can pass
     */
    private static boolean restrict(Set<String> allowed, boolean restricted, List<String> values, String where)
            throws UnsupportedSelector {
        if (!restricted) {
            allowed.addAll(values);
        } else {
            allowed.retainAll(values);
            if (allowed.isEmpty()) {
                throw new UnsupportedSelector(where + "no device can pass this and the selectors before it together");
            }
        }
        return true;
    }

    /** Whether this GPU passes every selector. */
    boolean allows(GpuDevice g) {
        return (includeModels.isEmpty() || includeModels.contains(g.model())) && !excludeModels.contains(g.model())
                && (includeUuids.isEmpty() || includeUuids.contains(g.uuid())) && !excludeUuids.contains(g.uuid())
                && predicates.stream().allMatch(p -> p.test(g));
    }

    /** Whether any selector is there. */
    boolean isNone() {
        return expressions.isEmpty();
    }

    /** Equality by the expressions written (the predicates are derived from them). */
    boolean sameAs(DeviceSelectors o) {
        return Objects.equals(new LinkedHashSet<>(expressions), new LinkedHashSet<>(o.expressions));
    }
}
