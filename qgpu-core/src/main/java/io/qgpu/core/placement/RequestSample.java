package io.qgpu.core.placement;

import io.qgpu.api.Validate;
import java.util.HashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * A sliding sample of the most recent request shapes, bounded to {@code capacity} entries (the
 * oldest is dropped when a new one arrives), and the {@link RequestMix} they make up. The
 * placement engine records every claim it is asked to place (placed or not: the sample describes
 * demand, not what fitted).
 *
 * <p>Memory: {@code capacity} references plus one counter per distinct shape. Cost of
 * {@link #record}: one map look-up (plus an insertion for a shape not in the sample, a removal for the
 * last of a shape leaving it); the ring holds each shape's counter, so the shape leaving the sample
 * is counted down without being hashed or read again; {@link #mix()} is one volatile read, plus a rebuild of the mix
 * (linear in the number of distinct shapes in the window, at most {@code capacity}) when a shape
 * was recorded since the last read.
 *
 * <pre>{@code
 * RequestSample sample = new RequestSample(1024);
 * sample.record(RequestShape.of(claim));
 * RequestMix mix = sample.mix();
 * }</pre>
 *
 * <p>Thread safety: thread-safe; {@link #record} and the rebuild are serialised on the sample,
 * {@link #mix()} reads a published immutable snapshot (rebuilt first when a record made it stale).
 */
public final class RequestSample {
    /** The capacity of the sample the engine keeps unless told otherwise. */
    public static final int DEFAULT_CAPACITY = 1024;

    /** The counter of each shape in the sample, oldest at {@link #next} once the sample is full. */
    private final Count[] ring;
    /**
     * The shapes in the sample and how many of each; a shape is inserted when it enters the sample and
     * removed when its last copy leaves it, with the same map operations as when the counts were
     * boxed integers ({@code computeIfPresent} down, {@code merge} up), so the map's order, which the
     * mix is built in, is the same.
     */
    private final Map<RequestShape, Count> counts = new HashMap<>();
    private int next;
    private int size;
    private volatile @Nullable RequestMix mix = RequestMix.empty();

    /** A sample of at most {@code capacity} (1..1,000,000) recent shapes. */
    public RequestSample(int capacity) {
        Validate.between("requestSample.capacity", capacity, 1, 1_000_000);
        this.ring = new Count[capacity];
    }

    /** How many copies of {@link #shape} (the first of them recorded) the sample holds. */
    private static final class Count {
        final RequestShape shape;
        int n;

        Count(RequestShape shape) {
            this.shape = shape;
        }
    }

    /** Adds one shape, dropping the oldest when the sample is full. */
    public synchronized void record(RequestShape shape) {
        Validate.notNull("requestSample.shape", shape);
        Count old = ring[next];
        if (old != null) {
            if (--old.n == 0) {
                counts.remove(old.shape);
            }
        } else {
            size++;
        }
        // computeIfAbsent inserts as the merge this replaced did (at the head of its bucket, the table
        // grown first), so the map keeps exactly the order it had, and so does the mix built from it
        Count c = counts.computeIfAbsent(shape, Count::new);
        c.n++;
        ring[next] = c;
        next = next + 1 == ring.length ? 0 : next + 1;
        if (mix != null) {
            mix = null;   // made again on the next read: a sample that is only recorded into costs no rebuild
        }
    }

    /** The mix of the shapes now in the sample (empty before the first record). */
    public RequestMix mix() {
        RequestMix m = mix;
        return m != null ? m : rebuild();
    }

    private synchronized RequestMix rebuild() {
        RequestMix m = mix;
        if (m == null) {
            Map<RequestShape, Double> w = new HashMap<>(counts.size() * 2);
            counts.forEach((k, v) -> w.put(k, (double) v.n));
            m = RequestMix.of(w);
            mix = m;
        }
        return m;
    }

    /** How many shapes the sample holds now. */
    public synchronized int size() {
        return size;
    }

    public int capacity() {
        return ring.length;
    }
}
