package io.qgpu.kubernetes.deviceplugin;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Optional;

/**
 * An {@link AllocationStore} around another that fails its next saves on demand: before writing (nothing
 * kept) or after writing (kept, but the caller cannot know).
 */
final class FlakyStore implements AllocationStore {
    enum Failure { BEFORE_WRITING, AFTER_WRITING }

    private final AllocationStore inner;
    private final Deque<Failure> next = new ArrayDeque<>();
    private int failed;

    FlakyStore(AllocationStore inner) {
        this.inner = inner;
    }

    /** The next saves fail, in this order. */
    synchronized FlakyStore failNext(Failure... failures) {
        next.addAll(List.of(failures));
        return this;
    }

    /** Forgets the failures not used yet. */
    synchronized void heal() {
        next.clear();
    }

    /** How many saves failed so far. */
    synchronized int failed() {
        return failed;
    }

    @Override
    public synchronized void save(String node, List<Allocation> allocations) {
        Failure f = next.poll();
        if (f == Failure.BEFORE_WRITING) {
            failed++;
            throw new IllegalStateException("injected: the state cannot be saved");
        }
        inner.save(node, allocations);
        if (f == Failure.AFTER_WRITING) {
            failed++;
            throw new IllegalStateException("injected: the state was saved, but the call failed");
        }
    }

    @Override
    public synchronized Optional<List<Allocation>> load(String node) {
        return inner.load(node);
    }
}
