package io.qgpu.kubernetes.extender;

import java.util.AbstractList;
import java.util.RandomAccess;

/**
 * Node names of one request (the candidates of a {@code NodeNames} request, or the nodes a filter
 * passed), each with its position in a {@link NodeNameTable} (-1 for a name the table does not hold),
 * so that the steps after the request reader find a node by position instead of looking its name up
 * again: the memo ({@link FitCache}) takes the position as it is when the table is its own, and the
 * reply writer takes the table's ready-escaped bytes of the name ({@link NodeNameTable#plainAscii}).
 *
 * <p>An unmodifiable list over the arrays it was given (nothing is copied: the caller hands them over
 * and keeps no reference), so that the request record and the filter reply keep it as it is instead
 * of copying 500 names per call. Names are distinct and not null (the request reader refuses the rest).
 *
 * <pre>{@code
 * CandidateNames c = new CandidateNames(new String[] {"node-b", "x"}, new int[] {1, -1}, 2, table);
 * c.get(0);            // "node-b"
 * c.position(0);       // 1: table.name(1) is "node-b"
 * }</pre>
 *
 * <p>Thread safety: immutable once made; safe from any thread.
 */
final class CandidateNames extends AbstractList<String> implements RandomAccess {
    private final String[] names;
    private final int[] positions;
    private final int size;
    private final NodeNameTable table;

    /**
     * @param names     the names, in order (the first {@code size} are used); where a position is given,
     *                  the table's name stands for the entry, which need not be filled; null when every
     *                  position is given
     * @param positions each name's position in {@code table}, or -1
     * @param size      how many names
     * @param table     the table the positions refer to
     */
    CandidateNames(String[] names, int[] positions, int size, NodeNameTable table) {
        if (size < 0 || (names != null && size > names.length) || size > positions.length) {
            throw new IllegalArgumentException("size " + size + " out of the arrays' range");
        }
        this.names = names;
        this.positions = positions;
        this.size = size;
        this.table = table;
    }

    @Override
    public String get(int index) {
        int p = positions[java.util.Objects.checkIndex(index, size)];
        return p >= 0 ? table.name(p) : names[index];
    }

    @Override
    public int size() {
        return size;
    }

    /** The position of the name at {@code index} in {@link #table()}, or -1 if the table does not hold it. */
    int position(int index) {
        return positions[java.util.Objects.checkIndex(index, size)];
    }

    /** The table the positions refer to. */
    NodeNameTable table() {
        return table;
    }

    @Override
    public boolean contains(Object o) {
        if (o instanceof String s) {
            int p = table.indexOf(s);
            for (int j = 0; j < size; j++) {
                if (p >= 0 ? positions[j] == p : positions[j] < 0 && s.equals(names[j])) {
                    return true;
                }
            }
        }
        return false;
    }
}
