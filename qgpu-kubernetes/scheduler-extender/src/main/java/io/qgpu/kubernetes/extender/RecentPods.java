package io.qgpu.kubernetes.extender;

import io.fabric8.kubernetes.api.model.Pod;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The pods of the last requests, by the bytes of their JSON: kube-scheduler sends the very same pod
 * to {@code prioritize} that it has just sent to {@code filter}, and reading it again (a JSON tree,
 * then fabric8's model through reflection) is the same work twice per pod. A pod whose bytes are
 * found here is the object read from those bytes before (equal bytes read alike, so the answer is the
 * same); the request reader ({@link NamesArgsReader}) asks before it reads a pod, and
 * {@link ExtenderRequests#parseArgs} files the pods it read.
 *
 * <p>Direct-mapped: {@value #SLOTS} slots by a hash of the bytes, the newer pod replacing the older in
 * its slot (room for many pods in flight at once between their filter and prioritize). Only pods that were read without a problem are filed. The pod objects are shared between
 * the requests that sent the same bytes: nobody changes a request's pod (the demo cluster records a
 * bind on a copy).
 *
 * <pre>{@code
 * RecentPods pods = new RecentPods();
 * Pod p = pods.find(body, start, length);       // null the first time
 * pods.file(body, start, length, read);
 * }</pre>
 *
 * <p>Thread safety: thread-safe (each slot holds an immutable entry, replaced atomically).
 */
final class RecentPods {
    static final int SLOTS = 256;

    private record Entry(byte[] bytes, int hash, Pod pod) {
    }

    private final AtomicReferenceArray<Entry> slots = new AtomicReferenceArray<>(SLOTS);

    /** The pod read before from exactly {@code bytes[offset, offset + length)}, or null. */
    Pod find(byte[] bytes, int offset, int length) {
        int hash = hash(bytes, offset, length);
        Entry e = slots.get(hash & (SLOTS - 1));
        return e != null && e.hash == hash && Arrays.equals(e.bytes, 0, e.bytes.length, bytes, offset, offset + length) ? e.pod : null;
    }

    /** Files {@code pod} as read from {@code bytes[offset, offset + length)} (the bytes are copied). */
    void file(byte[] bytes, int offset, int length, Pod pod) {
        int hash = hash(bytes, offset, length);
        slots.set(hash & (SLOTS - 1), new Entry(Arrays.copyOfRange(bytes, offset, offset + length), hash, pod));
    }

    private static int hash(byte[] bytes, int offset, int length) {
        int h = 1;
        for (int i = offset; i < offset + length; i++) {
            h = 31 * h + bytes[i];
        }
        return h ^ (h >>> 16);
    }
}
