package io.qgpu.kubernetes.extender;

import io.fabric8.kubernetes.api.model.Pod;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The names the last filters passed, by pod, each with the bytes of the {@code NodeNames} array its
 * reply has: kube-scheduler sends {@code prioritize} exactly the nodes the filter reply listed, in the
 * same order, with the same pod ({@link RecentPods} hands prioritize the very pod object filter read),
 * and reading and looking up those 500 names again is the same work twice per pod. When a prioritize
 * request's {@code NodeNames} array is, byte for byte, the array filed for its pod, and its name table
 * is the filed names' table (the same object), the request reader ({@link NamesArgsReader}) takes the
 * filed names instead of reading them.
 *
 * <p>The answer is the same: only names that are all their table's, each with its plain bytes
 * ({@link NodeNameTable#plainAscii}), are filed, and their array's bytes are the reply's
 * ({@link ReplyWriter#plainNamesArray}); reading those bytes with that table gives the same names at
 * the same positions. So a filed entry stands only for its own bytes and table: the pod is the key
 * that finds it, not what makes it right, and any difference (one byte, the order, another pod's
 * bytes, a table built again) leaves the request to the reader.
 *
 * <p>Direct-mapped: {@value #SLOTS} slots by the pod object's identity hash, the newer filter
 * replacing the older in its slot (as {@link RecentPods}, room for many pods between their filter and
 * prioritize). An entry keeps its array (some 6 KB for 500 names), its names and their table.
 *
 * <pre>{@code
 * FilteredNames filtered = new FilteredNames();
 * filtered.file(args.pod(), filterResult.nodeNames());          // after filter
 * FilteredNames.Filed f = filtered.find(pod, table, body, at);  // prioritize's array at body[at]: the names, or null
 * }</pre>
 *
 * <p>Thread safety: thread-safe (each slot holds an immutable entry, replaced atomically; the names are
 * immutable). The pods are not changed after they are read.
 */
final class FilteredNames {
    static final int SLOTS = 256;

    /**
     * The names a filter passed for {@code pod}.
     *
     * @param pod   the pod object the filter read (the key)
     * @param array the bytes of the filter reply's {@code NodeNames} array, brackets included
     * @param names the names, with their positions in their table
     */
    record Filed(Pod pod, byte[] array, CandidateNames names) {
    }

    private final AtomicReferenceArray<Filed> slots = new AtomicReferenceArray<>(SLOTS);

    /**
     * Files the names a filter passed for {@code pod}, as its reply writes them; names that are not
     * all their table's plain names (or not a {@link CandidateNames}, or null) are not filed.
     */
    void file(Pod pod, List<String> passed) {
        if (pod == null || !(passed instanceof CandidateNames names)) {
            return;
        }
        byte[] array = ReplyWriter.plainNamesArray(names);
        if (array != null) {
            slots.set(slot(pod), new Filed(pod, array, names));
        }
    }

    /**
     * The names filed for {@code pod} when {@code body} holds their array's bytes exactly from
     * {@code offset} on and their table is {@code table}; else null.
     */
    Filed find(Pod pod, NodeNameTable table, byte[] body, int offset) {
        Filed f = slots.get(slot(pod));
        if (f == null || f.pod != pod || f.names.table() != table) {
            return null;
        }
        int end = offset + f.array.length;
        return end <= body.length && Arrays.equals(f.array, 0, f.array.length, body, offset, end) ? f : null;
    }

    private static int slot(Pod pod) {
        return System.identityHashCode(pod) & (SLOTS - 1);
    }
}
