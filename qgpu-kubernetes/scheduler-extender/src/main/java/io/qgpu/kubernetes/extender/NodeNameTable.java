package io.qgpu.kubernetes.extender;

import io.qgpu.api.Validate;
import java.util.List;

/**
 * The node names of one ledger structure, each at its position, with lookups that allocate nothing:
 * by a name's characters as the JSON parser holds them ({@link #indexOf(char[], int, int)}), and by a
 * string ({@link #indexOf(String)}). The request reader hands on the table's own string for every
 * name it knows ({@link #name}), so the lookups that follow in the same request find it by identity
 * and reuse its cached hash instead of comparing characters.
 *
 * <p>An open-addressing table of at least twice as many slots as names, probed linearly; a name
 * occurs once and is not blank (a repeated or blank name is refused when the table is built).
 *
 * <p>Each name that JSON writes as it is (ASCII from 0x20 on, without {@code "} or {@code \}, as every
 * Kubernetes node name is) also has its bytes ready ({@link #plainAscii}), so that the replies copy a
 * name's bytes instead of encoding its characters again per request, and so that the request reader
 * finds a name by the bytes of the body ({@link #indexOfPlain}) without decoding them.
 *
 * <pre>{@code
 * NodeNameTable t = NodeNameTable.of(List.of("node-a", "node-b"));
 * t.indexOf("node-b");                                  // 1
 * t.indexOf("node-b".toCharArray(), 0, 6);              // 1
 * t.indexOf("node-c");                                  // -1
 * }</pre>
 *
 * <p>Thread safety: immutable; safe from any thread.
 */
final class NodeNameTable {
    /** A table with no names. */
    static final NodeNameTable EMPTY = of(List.of());

    private final String[] names;
    /** The ASCII bytes of each name that needs no escaping in JSON, else null; by position. */
    private final byte[][] plain;
    /** Index into {@link #names} plus one, by slot; 0 for an empty slot. */
    private final int[] slots;
    /** The hash of the name in each slot (valid where {@link #slots} is not 0). */
    private final int[] hashes;
    private final int mask;

    private NodeNameTable(String[] names) {
        this.names = names;
        int size = Integer.highestOneBit(Math.max(4, names.length * 2 + 1) - 1) << 1;
        this.slots = new int[size];
        this.hashes = new int[size];
        this.mask = size - 1;
        this.plain = new byte[names.length][];
        for (int i = 0; i < names.length; i++) {
            String name = Validate.notNull("names[" + i + "]", names[i]);
            if (name.isBlank()) {
                throw new IllegalArgumentException("node name at position " + i + " is blank");
            }
            int h = name.hashCode();
            int s = spread(h) & mask;
            while (slots[s] != 0) {
                if (hashes[s] == h && names[slots[s] - 1].equals(name)) {
                    throw new IllegalArgumentException("node name " + name + " occurs twice (positions " + (slots[s] - 1)
                            + " and " + i + ")");
                }
                s = (s + 1) & mask;
            }
            slots[s] = i + 1;
            hashes[s] = h;
            plain[i] = plainAscii(name);
        }
    }

    /** The name's bytes when JSON writes it unescaped (ASCII from 0x20 on, but {@code "} and {@code \}), else null. */
    static byte[] plainAscii(String name) {
        byte[] out = new byte[name.length()];
        for (int k = 0; k < out.length; k++) {
            char c = name.charAt(k);
            if (c < 0x20 || c > 0x7f || c == '"' || c == '\\') {
                return null;
            }
            out[k] = (byte) c;
        }
        return out;
    }

    /** The table of {@code names}, each at its index in the list. */
    static NodeNameTable of(List<String> names) {
        Validate.notNull("names", names);
        return new NodeNameTable(names.toArray(new String[0]));
    }

    /** How many names. */
    int size() {
        return names.length;
    }

    /** The name at {@code index} (the table's own string). */
    String name(int index) {
        return names[index];
    }

    /**
     * The bytes of the name at {@code index} as JSON writes them between the quotes (its ASCII bytes),
     * or null when the name needs escaping or is not plain ASCII. The array is shared: not to be changed.
     */
    byte[] plainAscii(int index) {
        return plain[index];
    }

    /** The position of {@code name}, or -1 if the table does not hold it. */
    int indexOf(String name) {
        int h = name.hashCode();
        int s = spread(h) & mask;
        int at;
        while ((at = slots[s]) != 0) {
            String n = names[at - 1];
            if (n == name || (hashes[s] == h && n.equals(name))) {
                return at - 1;
            }
            s = (s + 1) & mask;
        }
        return -1;
    }

    /**
     * The position of the name whose bytes, as {@link #plainAscii} gives them, are
     * {@code bytes[offset, offset + length)}, or -1 if the table holds no such name.
     *
     * @param hash the bytes' {@link String#hashCode} formula ({@code h = 31 * h + b}), which the caller
     *             computed while it scanned them
     */
    int indexOfPlain(byte[] bytes, int offset, int length, int hash) {
        int s = spread(hash) & mask;
        int at;
        while ((at = slots[s]) != 0) {
            if (hashes[s] == hash) {
                byte[] b = plain[at - 1];
                if (b != null && java.util.Arrays.equals(b, 0, b.length, bytes, offset, offset + length)) {
                    return at - 1;
                }
            }
            s = (s + 1) & mask;
        }
        return -1;
    }

    /** The position of the name held in {@code chars[offset, offset + length)}, or -1 if the table does not hold it. */
    int indexOf(char[] chars, int offset, int length) {
        int h = 0;
        for (int k = 0; k < length; k++) {
            h = 31 * h + chars[offset + k];   // String.hashCode's formula
        }
        int s = spread(h) & mask;
        int at;
        while ((at = slots[s]) != 0) {
            if (hashes[s] == h && same(names[at - 1], chars, offset, length)) {
                return at - 1;
            }
            s = (s + 1) & mask;
        }
        return -1;
    }

    private static boolean same(String name, char[] chars, int offset, int length) {
        if (name.length() != length) {
            return false;
        }
        for (int k = 0; k < length; k++) {
            if (name.charAt(k) != chars[offset + k]) {
                return false;
            }
        }
        return true;
    }

    private static int spread(int h) {
        return h ^ (h >>> 16);
    }
}
