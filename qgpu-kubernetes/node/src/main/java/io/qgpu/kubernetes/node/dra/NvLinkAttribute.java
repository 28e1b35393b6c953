package io.qgpu.kubernetes.node.dra;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The {@value DraNames#ATTRIBUTE_NVLINK} device attribute, the one place that writes it (the DRA driver,
 * {@link #format}) and reads it (the DRA allocator, {@link #parse}): a GPU's NVLink lanes to each other GPU of its
 * node and whether they go through an NVSwitch, as {@code <peer>:<lanes>[s]} entries where {@code <peer>} is the
 * other GPU's {@value DraNames#ATTRIBUTE_INDEX} or {@code *} for every GPU no entry names (the format in full:
 * {@link DraNames#ATTRIBUTE_NVLINK}).
 *
 * <pre>{@code
 * NvLinkAttribute.format(0, List.of(1, 2, 3), Map.of(1, new Lanes(18, true), 2, new Lanes(18, true),
 *         3, new Lanes(18, true)));                                  // Optional["*:18s"]
 * NvLinkAttribute a = NvLinkAttribute.parse("gpu-0", 0, "1:1,2:1,3:2,4:2");
 * a.to(3);                                                           // Optional[Lanes[lanes=2, nvSwitch=false]]
 * a.to(5);                                                           // Optional.empty: no NVLink
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public final class NvLinkAttribute {
    /** The most lanes a pair may have ({@code io.qgpu.api.GpuLink.NvLink}'s limit). */
    public static final int MAX_LANES = 64;
    private static final String ALL = "*";
    private static final Pattern ENTRY = Pattern.compile("(\\*|0|[1-9][0-9]{0,8}):(0|[1-9][0-9]?)(s?)");

    /**
     * The NVLinks between two GPUs.
     *
     * @param lanes    active NVLink lanes between them, 1 to {@value #MAX_LANES}
     * @param nvSwitch whether they go through an NVSwitch
     */
    public record Lanes(int lanes, boolean nvSwitch) {
        public Lanes {
            if (lanes < 1 || lanes > MAX_LANES) {
                throw new IllegalArgumentException("NVLink lanes " + lanes + ": must be from 1 to " + MAX_LANES);
            }
        }

        /** {@code 18s}, {@code 2}: as an entry writes it after the colon. */
        @Override
        public String toString() {
            return lanes + (nvSwitch ? "s" : "");
        }
    }

    /** An attribute value that is not in the format, naming the device, the attribute and the value. */
    public static final class InvalidException extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;
        private final String device;
        private final String value;

        InvalidException(String device, String value, String why) {
            super("device " + device + ": attribute " + DraNames.ATTRIBUTE_NVLINK + " = \"" + value + "\": " + why);
            this.device = device;
            this.value = value;
        }

        /** The device whose attribute it is. */
        public String device() {
            return device;
        }

        /** The attribute's value as published. */
        public String value() {
            return value;
        }
    }

    private final Optional<Lanes> others;
    private final Map<Integer, Optional<Lanes>> named;

    private NvLinkAttribute(Optional<Lanes> others, Map<Integer, Optional<Lanes>> named) {
        this.others = others;
        this.named = Collections.unmodifiableMap(new LinkedHashMap<>(named));
    }

    /**
     * The NVLinks to the GPU with this index: the entry naming it, else the {@code *} entry, else none.
     */
    public Optional<Lanes> to(int peer) {
        Optional<Lanes> n = named.get(peer);
        return n != null ? n : others;
    }

    /**
     * The attribute of one GPU: the shortest way to write its NVLinks (every peer named, or {@code *} for the
     * most frequent kind of link with the others named), entries after {@code *} by index; empty when it has no
     * NVLink to any peer (the attribute is left out).
     *
     * @param self  the GPU's index
     * @param peers the indices of the other GPUs of its node (those {@code *} stands for)
     * @param links the NVLinks to some of them, by index
     * @throws IllegalArgumentException when a link names a GPU not among {@code peers}, or the shortest form is
     *                                  longer than {@value DraNames#MAX_STRING_ATTRIBUTE} characters
     */
    public static Optional<String> format(int self, Collection<Integer> peers, Map<Integer, Lanes> links) {
        Set<Integer> all = new TreeSet<>(peers);
        if (all.contains(self)) {
            throw new IllegalArgumentException("GPU " + self + " is among its own peers " + all);
        }
        if (!all.containsAll(links.keySet())) {
            throw new IllegalArgumentException("GPU " + self + ": NVLinks to " + links.keySet() + ", not all among its peers " + all);
        }
        if (links.isEmpty()) {
            return Optional.empty();
        }
        Map<Integer, Lanes> byIndex = new TreeMap<>(links);
        List<String> explicit = new ArrayList<>();
        byIndex.forEach((peer, l) -> explicit.add(peer + ":" + l));
        String best = String.join(",", explicit);
        for (Lanes common : new LinkedHashSet<>(byIndex.values())) {
            List<String> entries = new ArrayList<>();
            entries.add(ALL + ":" + common);
            for (int peer : all) {
                Lanes l = byIndex.get(peer);
                if (!common.equals(l)) {
                    entries.add(peer + ":" + (l == null ? "0" : l.toString()));
                }
            }
            String s = String.join(",", entries);
            if (s.length() < best.length()) {
                best = s;
            }
        }
        if (best.length() > DraNames.MAX_STRING_ATTRIBUTE) {
            throw new IllegalArgumentException("GPU " + self + ": its NVLinks cannot be written in " + DraNames.MAX_STRING_ATTRIBUTE
                    + " characters; the shortest form is " + best.length() + " long: " + best);
        }
        return Optional.of(best);
    }

    /**
     * Reads a GPU's attribute.
     *
     * @param device the device's name in its pool, for messages
     * @param self   the device's own index (no entry may name it)
     * @param value  the attribute's string
     * @throws InvalidException naming the device, the attribute, the value and what is wrong
     */
    public static NvLinkAttribute parse(String device, int self, String value) {
        if (value == null || value.isEmpty()) {
            throw new InvalidException(device, String.valueOf(value), "must have at least one entry <peer>:<lanes>[s]"
                    + " (a GPU without NVLink has no " + DraNames.ATTRIBUTE_NVLINK + " attribute)");
        }
        if (value.length() > DraNames.MAX_STRING_ATTRIBUTE) {
            throw new InvalidException(device, value, "is " + value.length() + " characters long; at most "
                    + DraNames.MAX_STRING_ATTRIBUTE);
        }
        Optional<Lanes> others = Optional.empty();
        boolean star = false;
        Map<Integer, Optional<Lanes>> named = new LinkedHashMap<>();
        String[] entries = value.split(",", -1);
        for (int i = 0; i < entries.length; i++) {
            String e = entries[i];
            Matcher m = ENTRY.matcher(e);
            if (!m.matches()) {
                throw new InvalidException(device, value, "entry " + (i + 1) + " \"" + e + "\" must be <peer>:<lanes>[s]: <peer> a GPU's "
                        + DraNames.ATTRIBUTE_INDEX + " or *, <lanes> 0 to " + MAX_LANES + ", s for an NVSwitch");
            }
            int lanes = Integer.parseInt(m.group(2));
            boolean nvSwitch = !m.group(3).isEmpty();
            if (lanes > MAX_LANES) {
                throw new InvalidException(device, value, "entry " + (i + 1) + " \"" + e + "\": at most " + MAX_LANES + " lanes");
            }
            if (lanes == 0 && nvSwitch) {
                throw new InvalidException(device, value, "entry " + (i + 1) + " \"" + e + "\": 0 lanes (no NVLink) go through no NVSwitch");
            }
            Optional<Lanes> l = lanes == 0 ? Optional.empty() : Optional.of(new Lanes(lanes, nvSwitch));
            if (m.group(1).equals(ALL)) {
                if (star) {
                    throw new InvalidException(device, value, "entry " + (i + 1) + " \"" + e + "\": a second * entry");
                }
                if (l.isEmpty()) {
                    throw new InvalidException(device, value, "entry " + (i + 1) + " \"" + e
                            + "\": * stands for GPUs with NVLink (leave out the attribute for none)");
                }
                star = true;
                others = l;
                continue;
            }
            int peer = Integer.parseInt(m.group(1));
            if (peer == self) {
                throw new InvalidException(device, value, "entry " + (i + 1) + " \"" + e + "\" names the GPU's own "
                        + DraNames.ATTRIBUTE_INDEX + " " + self);
            }
            if (named.put(peer, l) != null) {
                throw new InvalidException(device, value, "entry " + (i + 1) + " \"" + e + "\" names GPU " + peer + " a second time");
            }
        }
        return new NvLinkAttribute(others, named);
    }

    /** The attribute as read: {@code *} first, then the named GPUs in the order given. */
    @Override
    public String toString() {
        List<String> out = new ArrayList<>();
        others.ifPresent(l -> out.add(ALL + ":" + l));
        named.forEach((peer, l) -> out.add(peer + ":" + l.map(Lanes::toString).orElse("0")));
        return String.join(",", out);
    }
}
