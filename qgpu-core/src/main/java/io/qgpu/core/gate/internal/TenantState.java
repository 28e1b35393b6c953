package io.qgpu.core.gate.internal;

import io.qgpu.api.PriorityClass;
import io.qgpu.core.gate.GateTenantSpec;
import io.qgpu.core.internal.SlidingWindow;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A tenant of a gate: its lock-free fast-path state: a permit
 * (the ticker time until which leases may start and go on without asking the engines), a word with
 * the number of running leases and the number of the current busy period, and a ring of busy periods
 * (a period starts when the first lease starts running and ends when the last one stops) that is
 * drained into the tenant's own bounded usage window ({@link SlidingWindow}). A drain takes the
 * tenant's small books lock, never the gate's lock, so a full ring is emptied by the thread that
 * finds it full. The fields marked "guarded by the gate's lock" belong to the other parts.
 *
 * <p>Thread safety: thread-safe as used: lock-free fields are atomic, the books under their lock,
 * the rest under the gate's lock.
 */
public abstract class TenantState {

    static final long NO_PERMIT = Long.MIN_VALUE;
    /** {@link #enter}: no lease was added. */
    static final long REFUSED = Long.MIN_VALUE;
    /** {@link #enter}: a lease was added beside running ones (or opened a period without the opener bit). */
    static final long JOINED = -1;
    /** Bit of {@link #word}: the lease that opened the current busy period runs, and stops through this bit. */
    static final long OPENER = 1L << 31;
    /** Bits of {@link #word}: the number of running leases (the opener's included). */
    static final long COUNT = OPENER - 1;
    static final int RING = 256;
    private static final int MASK = RING - 1;
    private static final VarHandle INTS = MethodHandles.arrayElementVarHandle(int[].class);

    final GateCore core;
    final GateTenantSpec spec;
    final String name;
    final boolean online;
    /** The most lease time the tenant may have in a window. */
    final long limitNanos;

    // ---- fast path, lock-free ----
    /** Leases may start and go on while the ticker reads less than this; written only by {@link #setPermit} and {@link #revokeIfIdle}. */
    volatile long permitUntil = NO_PERMIT;
    /**
     * High 32 bits: number of the last busy period opened; bit 31: {@link #OPENER}; bits 0-30: running
     * leases.
     */
    final PaddedWord word = new PaddedWord();
    /** Number of the last busy period drained into the window. */
    volatile int drained;
    private final long[] starts = new long[RING];
    private final long[] ends = new long[RING];
    private final int[] endSeq = new int[RING];
    private final int[] startSeq = new int[RING];
    final ThreadLocal<Holder> holders;

    // ---- the books: guarded by {@code books} ----
    final ReentrantLock books = new ReentrantLock();
    final SlidingWindow window;
    private final long windowNanos;
    private long lastEnd = Long.MIN_VALUE;
    private long totalNanos;

    // ---- guarded by gate.lock ----
    final Condition cond;
    final ArrayDeque<Waiter> waiters = new ArrayDeque<>();
    /** Parked leases waiting asynchronously to resume (counted in {@link #parked}, not in waiters). */
    final ArrayDeque<Waiter> resumers = new ArrayDeque<>();
    final List<Holder> holderList = new ArrayList<>();
    int parked;
    boolean registered = true;
    boolean requested;
    boolean holdsToken;
    long grantStart;
    long grantExpiry;
    /** When the tenant last went idle, as found by the gate's last quiescence check. */
    long idleAt = Long.MIN_VALUE;
    long quotaWakeAt = Long.MAX_VALUE;
    /** The gate's cache of this tenant's machine phase, valid for {@link #phaseState}. */
    io.qgpu.core.preempt.TenantPhase phase;
    io.qgpu.core.preempt.PreemptionState phaseState;
    boolean quotaReported;

    /** A tenant of {@code core}; the gate's {@link Handles} makes it (its public handle is a subclass). */
    protected TenantState(GateCore core, GateTenantSpec spec, long limitNanos) {
        this.core = core;
        this.spec = spec;
        this.name = spec.name();
        this.online = spec.priority() == PriorityClass.ONLINE;
        this.limitNanos = limitNanos;
        this.windowNanos = core.config.windowNanos();
        this.window = SlidingWindow.bounded(windowNanos, Math.max(1, windowNanos / 1024));
        this.cond = core.lock.newCondition();
        // the holder refers to no tenant or gate: see Holder
        this.holders = ThreadLocal.withInitial(() -> core.owners.newHolder(this));
    }

    /** The tenant's name, unique within its gate. */
    public final String name() {
        return name;
    }

    /** What it registered with. */
    public final GateTenantSpec spec() {
        return spec;
    }

    /** Leases running now (a snapshot). */
    public final int runningLeases() {
        return running();
    }

    int running() {
        return (int) (word.get() & COUNT);
    }

    /** Whether work waits to run: an acquire in the queue or a lease parked at a checkpoint. Under the lock. */
    boolean hasWork() {
        return !waiters.isEmpty() || parked != 0;
    }

    /**
     * The calling thread's holder of this tenant's leases. The thread-local lookup is skipped while
     * the same thread keeps entering: the last holder is cached on the running-lease word (a plain,
     * racy field; a reader that finds another thread's holder, or none, looks its own up). A holder's
     * thread is a final field, so a racy read sees it whole, and the other fields of the holder are
     * used only by its own thread.
     */
    Holder holder() {
        Holder h = word.last;
        if (h == null || h.thread != Thread.currentThread()) {
            h = holders.get();
            word.last = h;
        }
        return h;
    }

    /**
     * Adds a running lease if the permit allows it at {@code now}; lock-free and allocation-free
     * (once every {@value #RING} busy periods the thread that finds the ring full drains it under the
     * tenant's books lock). A lease that raced with a revocation of the permit is taken back at once
     * (false). The lease never holds the opener bit.
     */
    boolean tryEnter(long now) {
        return enter(now, false) != REFUSED;
    }

    /**
     * {@link #tryEnter}, and if the lease opens a busy period and {@code opener} is true, the word's
     * {@link #OPENER} bit is set with it: that lease then stops through {@link #leaveOpener} (closing
     * it, one compare-and-set on the word) or {@link #clearOpener} (any other stop), never through
     * {@link #leaveOne}.
     *
     * @return {@link #REFUSED}; {@link #JOINED}; or, for a lease that holds the opener bit, the number
     *         of the period it opened (as an unsigned int)
     */
    long enter(long now, boolean opener) {
        if (now >= permitUntil) {
            return REFUSED;
        }
        long entry;
        while (true) {
            long w = word.get();
            if ((w & COUNT) == 0) {   // a stale opener bit (a reclaimed lease's) goes with the old word
                int s = (int) (w >>> 32) + 1;
                if (s - drained > RING) {
                    makeRoom();
                    continue;
                }
                if (word.compareAndSet(w, ((long) s << 32) | (opener ? OPENER : 0) | 1L)) {
                    int i = s & MASK;
                    starts[i] = now;
                    INTS.setRelease(startSeq, i, s);
                    entry = opener ? s & 0xFFFF_FFFFL : JOINED;
                    break;
                }
            } else if (word.compareAndSet(w, w + 1)) {
                entry = JOINED;
                break;
            }
        }
        if (now >= permitUntil) { // revoked while we entered (the revoker then reads the count)
            if (entry == JOINED) {
                leaveOne(now);
            } else {
                leaveOpener((int) entry, now);
            }
            return REFUSED;
        }
        return entry;
    }

    // ------------------------------------------------------------------------------------------
    // the permit: written only here, under the gate's lock

    /**
     * Under the gate's lock: the permit lasts until {@code until} ({@link #NO_PERMIT}: none). Lowering
     * it stops no running lease: each stops at its next checkpoint; to learn whether any runs, use
     * {@link #revokeIfIdle}.
     */
    void setPermit(long until) {
        if (permitUntil != until) {
            permitUntil = until;
        }
    }

    /**
     * Under the gate's lock: revokes the permit, <em>then</em> reads the running count; if a lease
     * runs, the permit is restored. This is the revoker's half of the protocol with {@link #enter}
     * (which raises the count, then reads the permit), ordered like Dekker's algorithm: both sides
     * write their variable and then read the other's, all volatile, so at least one of them sees the
     * other. Either the revoker sees the lease (false), or the entry sees the revocation and backs
     * out; a lease can never be granted that the revoker did not see. Reading the count first and
     * revoking after, as {@code unregister} once did, lets an entry slip between the two and keep a
     * lease that nobody accounts for. Every caller that needs "no lease runs and none can start"
     * comes here: {@link EngineBridge} before it reports a tenant idle or stopped,
     * {@link GateCore#unregister} before it removes one.
     *
     * @return true if no lease runs: the permit stays revoked, so until it is set again no lease of
     *         the tenant starts on the lock-free path (and the lock-side entries take the gate's
     *         lock, which the caller holds); false if a lease runs (or an entry racing with this
     *         call is backing out), with the permit as it was
     */
    boolean revokeIfIdle() {
        long p = permitUntil;
        permitUntil = NO_PERMIT;
        if (running() != 0) {
            permitUntil = p;
            return false;
        }
        return true;
    }

    /**
     * Removes a running lease that does not hold the opener bit; when it was the last, the busy
     * period ends at {@code now}.
     *
     * @return whether the tenant went idle
     */
    boolean leaveOne(long now) {
        long w = word.getAndDecrement();
        int run = (int) (w & COUNT);
        if (run <= 0) {
            word.getAndIncrement();
            throw new IllegalStateException("tenant " + name + ": running lease count would go below 0");
        }
        if (run == 1) {
            endPeriod((int) (w >>> 32), now);
            return true;
        }
        return false;
    }

    /**
     * Removes the running lease that opened period {@code period} and holds the opener bit, in one
     * compare-and-set that clears the bit and lowers the count; when it was the last, the period ends
     * at {@code now}. Fails if the bit is no longer set for that period: another thread stopped the
     * lease first ({@link #clearOpener}).
     *
     * @return -1 if it failed, 1 if the tenant went idle, else 0
     */
    int leaveOpener(int period, long now) {
        while (true) {
            long w = word.get();
            if ((int) (w >>> 32) != period || (w & OPENER) == 0 || (w & COUNT) == 0) {
                return -1;   // (a bit left with no count is a reclaimed lease's: see Owners)
            }
            long next = w - OPENER - 1;   // the opener counts, so the count is at least 1
            if (word.compareAndSet(w, next)) {
                if ((next & COUNT) == 0) {
                    endPeriod(period, now);
                    return 1;
                }
                return 0;
            }
        }
    }

    /**
     * Clears the opener bit of period {@code period}, leaving the count as it is (the caller then
     * stops the lease and lowers the count with {@link #leaveOne}). Fails if the bit is no longer set
     * for that period: the lease's owner closed it first ({@link #leaveOpener}).
     */
    boolean clearOpener(int period) {
        while (true) {
            long w = word.get();
            if ((int) (w >>> 32) != period || (w & OPENER) == 0) {
                return false;
            }
            if (word.compareAndSet(w, w & ~OPENER)) {
                return true;
            }
        }
    }

    /** Publishes the end of busy period {@code s}: the last running lease stopped. */
    private void endPeriod(int s, long now) {
        int i = s & MASK;
        ends[i] = now;
        INTS.setRelease(endSeq, i, s);
    }

    /** The ring is full: drain it here, or let the thread draining it now finish. */
    private void makeRoom() {
        if (books.tryLock()) {
            try {
                drainLocked();
            } finally {
                books.unlock();
            }
        }
        Thread.onSpinWait();
    }

    /**
     * Moves ended busy periods into the window. Holds the books lock. The periods that join the
     * window's last chunk (nearly all of them when leases are short) are summed here and added in one
     * step; the window ends up as if each had been recorded on its own.
     */
    private void drainLocked() {
        int d = drained;
        long last = lastEnd;
        long total = totalNanos;
        long joinLimit = window.joinLimit();
        long joinedEnd = 0;
        long joinedBusy = 0;   // > 0 while periods wait to be added to the last chunk
        while (true) {
            int s = d + 1;
            int i = s & MASK;
            if ((int) INTS.getAcquire(endSeq, i) != s) {
                break;
            }
            long st = Math.max(starts[i], last);
            long en = Math.max(ends[i], st);
            if (en > st) {
                // st >= last >= the window's last end: it joins the last chunk if it ends in time
                if (en <= joinLimit) {
                    joinedEnd = en;
                    joinedBusy += en - st;
                } else {
                    if (joinedBusy > 0) {
                        window.extendLast(joinedEnd, joinedBusy);
                        joinedBusy = 0;
                    }
                    window.record(st, en);   // a chunk of its own
                    joinLimit = window.joinLimit();
                }
                total += en - st;
            }
            last = en;
            d = s;
        }
        if (joinedBusy > 0) {
            window.extendLast(joinedEnd, joinedBusy);
        }
        lastEnd = last;
        totalNanos = total;
        drained = d;
    }

    /**
     * After the count was seen at 0 with the permit revoked: waits (spinning; the closing thread is
     * between two stores) until the last period is published, drains, and returns when the tenant
     * went idle.
     */
    // Thread.yield after 100 spins is deliberate back-off: the closing thread that must make the
    // second store may be descheduled, and on a machine with fewer cores than spinning threads only
    // yielding lets it run; correctness does not depend on the scheduler, only progress does.
    @SuppressWarnings("ThreadPriorityCheck")
    long drainIdle() {
        long w = word.get();
        int s = (int) (w >>> 32);
        if ((w & COUNT) == 0 && s != 0) {
            int i = s & MASK;
            int spins = 0;
            while (s - drained > 0 && (int) INTS.getAcquire(endSeq, i) != s) {
                if (++spins > 100) {
                    Thread.yield();
                } else {
                    Thread.onSpinWait();
                }
            }
        }
        books.lock();
        try {
            drainLocked();
            return lastEnd;
        } finally {
            books.unlock();
        }
    }

    /** Lease time in the window ending {@code now}, counting a period in progress up to now. */
    long usage(long now) {
        books.lock();
        try {
            drainLocked();
            return window.usage(now) + Math.min(now - openStart(now), windowNanos); // openStart: now if none
        } finally {
            books.unlock();
        }
    }

    /** Lease time since registration, counting a period in progress up to now. */
    long totalNanos(long now) {
        books.lock();
        try {
            drainLocked();
            long open = openStart(now);
            return totalNanos + Math.max(0, now - open);
        } finally {
            books.unlock();
        }
    }

    /** When usage will have fallen to {@code target} if the tenant stays idle. */
    long timeUsageAtMost(long target, long now) {
        books.lock();
        try {
            drainLocked();
            return window.timeUsageAtMost(target, now);
        } finally {
            books.unlock();
        }
    }

    /** Start of the busy period in progress, or {@code now} if none (or not yet published). Holds the books lock. */
    private long openStart(long now) {
        long w = word.get();
        if ((w & COUNT) == 0) {
            return now;
        }
        int s = (int) (w >>> 32);
        int i = s & MASK;
        if ((int) INTS.getAcquire(startSeq, i) != s) {
            return now;
        }
        return Math.min(now, Math.max(starts[i], lastEnd));
    }

    @Override
    public final String toString() {
        return "Tenant[" + name + " " + spec.priority().wireName() + " " + spec.requestPercent() + "/"
                + spec.limitPercent() + "% on " + core.gpu + "]";
    }
}
