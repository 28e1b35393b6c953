package io.qgpu.core.gate.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/** Padding before the value of {@link PaddedWord} (superclass fields are laid out first). */
abstract class PaddedWordLeft {
    long l1, l2, l3, l4, l5, l6, l7;
}

/** The value of {@link PaddedWord}. */
abstract class PaddedWordValue extends PaddedWordLeft {
    volatile long value;
    /**
     * The holder of the thread that last entered through this word (see {@link TenantState#holder()}),
     * on the word's own line: an entering thread has just written that line with its compare-and-set,
     * so replacing the reference costs no extra line transfer.
     */
    Holder last;
}

/**
 * A tenant's running-lease word on a cache line of its own (padding before and after the value), so
 * that the atomic updates of threads entering and leaving leases do not also invalidate the lines of
 * the tenant's permit and books, which every entry reads.
 *
 * <p>Thread safety: thread-safe (atomic operations on one volatile long; {@code last} is a racy cache
 * whose readers check it, see {@link TenantState#holder()}).
 */
final class PaddedWord extends PaddedWordValue {
    long r1, r2, r3, r4, r5, r6, r7;

    private static final VarHandle VALUE;

    static {
        try {
            VALUE = MethodHandles.lookup().findVarHandle(PaddedWordValue.class, "value", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    long get() {
        return value;
    }

    boolean compareAndSet(long expect, long update) {
        return VALUE.compareAndSet(this, expect, update);
    }

    long getAndDecrement() {
        return (long) VALUE.getAndAdd(this, -1L);
    }

    long getAndIncrement() {
        return (long) VALUE.getAndAdd(this, 1L);
    }
}
