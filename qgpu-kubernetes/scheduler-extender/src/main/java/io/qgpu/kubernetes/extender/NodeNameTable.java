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
    /**
     * By slot: the name's hash in the high half and its index plus one in the low half; 0 for an empty
     * slot. One array, so that a probe reads one place.
     */
    private final long[] slots;
    /** The bytes of every name that needs no escaping in JSON, one after another, in index order. */
    private final byte[] pool;
    /** By index: where the name's bytes start in {@link #pool} (high half) and their length (low half); -1 if none. */
    private final long[] spans;
    private final int mask;

    private NodeNameTable(String[] names) {
        this.names = names;
        int size = Integer.highestOneBit(Math.max(4, names.length * 2 + 1) - 1) << 1;
        this.slots = new long[size];
        this.mask = size - 1;
        this.spans = new long[names.length];
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        for (int i = 0; i < names.length; i++) {
            String name = Validate.notNull("names[" + i + "]", names[i]);
            if (name.isBlank()) {
                throw new IllegalArgumentException("node name at position " + i + " is blank");
            }
            int h = name.hashCode();
            int s = spread(h) & mask;
            long e;
            while ((e = slots[s]) != 0) {
                if ((int) (e >>> 32) == h && names[(int) e - 1].equals(name)) {
                    throw new IllegalArgumentException("node name " + name + " occurs twice (positions " + ((int) e - 1)
                            + " and " + i + ")");
                }
                s = (s + 1) & mask;
            }
            slots[s] = ((long) h << 32) | (i + 1);
            byte[] plain = plainAscii(name);
            spans[i] = plain == null ? -1 : ((long) bytes.size() << 32) | plain.length;
            if (plain != null) {
                bytes.write(plain, 0, plain.length);
            }
        }
        this.pool = bytes.toByteArray();
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
     * or null when the name needs escaping or is not plain ASCII: a copy of
     * {@code plainBytes()[plainOffset(index), plainOffset(index) + plainLength(index))}.
     */
    byte[] plainAscii(int index) {
        int length = plainLength(index);
        return length < 0 ? null : java.util.Arrays.copyOfRange(pool, plainOffset(index), plainOffset(index) + length);
    }

    /** How many bytes the name at {@code index} takes in {@link #plainBytes()}, or -1 if it is not there (it needs escaping). */
    int plainLength(int index) {
        long span = spans[index];
        return span < 0 ? -1 : (int) span;
    }

    /** Where the name at {@code index} starts in {@link #plainBytes()} (valid where {@link #plainLength} is not -1). */
    int plainOffset(int index) {
        return (int) (spans[index] >>> 32);
    }

    /** The bytes of the plain names, one after another; shared: not to be changed. */
    byte[] plainBytes() {
        return pool;
    }

    /** The position of {@code name}, or -1 if the table does not hold it. */
    int indexOf(String name) {
        int h = name.hashCode();
        int s = spread(h) & mask;
        long e;
        while ((e = slots[s]) != 0) {
            String n = names[(int) e - 1];
            if (n == name || ((int) (e >>> 32) == h && n.equals(name))) {
                return (int) e - 1;
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
        long e;
        while ((e = slots[s]) != 0) {
            if ((int) (e >>> 32) == hash) {
                int at = (int) e - 1;
                long span = spans[at];
                if (span >= 0 && (int) span == length) {
                    int from = (int) (span >>> 32);
                    if (java.util.Arrays.equals(pool, from, from + length, bytes, offset, offset + length)) {
                        return at;
                    }
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
        long e;
        while ((e = slots[s]) != 0) {
            if ((int) (e >>> 32) == h && same(names[(int) e - 1], chars, offset, length)) {
                return (int) e - 1;
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
