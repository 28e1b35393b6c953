package io.qgpu.core.gate.internal;

import io.qgpu.api.Validate;
import io.qgpu.core.gate.GateEvent;
import io.qgpu.core.gate.GateListener;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A gate's listeners and everything the gate hands out only after its lock is released: events
 * collected under the lock, async grants (futures completed with their lease) and failures. The
 * thread that releases the lock runs them, so listeners and future callbacks never run under the
 * gate's lock.
 *
 * <p>Thread safety: thread-safe; the pending lists are guarded by the gate's lock, the listener
 * array is copy-on-write.
 */
public final class EventDispatch {

    private static final Logger LOG = LoggerFactory.getLogger(EventDispatch.class);
    private static final GateListener[] NO_LISTENERS = {};

    private final GateCore core;
    private volatile GateListener[] listeners = NO_LISTENERS;

    // ---- under the gate's lock ----
    private final List<GateEvent> pendingEvents = new ArrayList<>();
    private final List<Waiter> pendingGrants = new ArrayList<>();
    private final List<LeaseImpl> pendingLeases = new ArrayList<>();
    private final List<Waiter> pendingFailures = new ArrayList<>();
    private final List<RuntimeException> pendingCauses = new ArrayList<>();

    EventDispatch(GateCore core) {
        this.core = core;
    }

    /** Adds a listener; events are built only while at least one is registered. */
    public void addListener(GateListener listener) {
        Validate.notNull("gate.listener", listener);
        synchronized (this) {
            GateListener[] l = Arrays.copyOf(listeners, listeners.length + 1);
            l[l.length - 1] = listener;
            listeners = l;
        }
    }

    /** Removes a listener (the first registration of it); no effect if absent. */
    public void removeListener(GateListener listener) {
        synchronized (this) {
            GateListener[] l = listeners;
            for (int i = 0; i < l.length; i++) {
                if (l[i] == listener) {
                    GateListener[] n = new GateListener[l.length - 1];
                    System.arraycopy(l, 0, n, 0, i);
                    System.arraycopy(l, i + 1, n, i, l.length - 1 - i);
                    listeners = n.length == 0 ? NO_LISTENERS : n;
                    return;
                }
            }
        }
    }

    /** Whether any listener is registered (events are built only then). */
    public boolean hasListeners() {
        return listeners.length != 0;
    }

    /** Calls the listeners now (outside the lock); a failing listener is logged and skipped. */
    void fire(GateEvent e) {
        for (GateListener l : listeners) {
            try {
                l.onEvent(e);
            } catch (RuntimeException ex) {
                LOG.warn("gate {}: listener {} failed on {}", core.gpu, l, e, ex);
            }
        }
    }

    /** Under the lock: an event for the listeners, fired when the lock is released. */
    void later(GateEvent e) {
        pendingEvents.add(e);
    }

    /** Under the lock: complete {@code w}'s future with {@code lease} when the lock is released. */
    void grant(Waiter w, LeaseImpl lease) {
        pendingGrants.add(w);
        pendingLeases.add(lease);
    }

    /** Under the lock: fail {@code w}'s future with {@code cause} when the lock is released. */
    void fail(Waiter w, RuntimeException cause) {
        pendingFailures.add(w);
        pendingCauses.add(cause);
    }

    /** Unlocks the gate's lock, then hands out what was collected under it. */
    void unlockAndDispatch() {
        if (core.lock.getHoldCount() > 1 || !hasPending()) {
            core.lock.unlock();
            return;
        }
        Runnable dispatch = takePending();
        core.lock.unlock();
        dispatch.run();
    }

    /**
     * Before waiting on a condition: if this thread collected events or grants, hands them out with
     * the lock released (then the caller re-checks instead of waiting).
     *
     * @return whether the lock was released meanwhile
     */
    boolean flushBeforeWait() {
        if (core.lock.getHoldCount() > 1 || !hasPending()) {
            return false;
        }
        Runnable dispatch = takePending();
        core.lock.unlock();
        try {
            dispatch.run();
        } finally {
            core.lock.lock();
        }
        return true;
    }

    private boolean hasPending() {
        return !pendingEvents.isEmpty() || !pendingGrants.isEmpty() || !pendingFailures.isEmpty();
    }

    private Runnable takePending() {
        List<GateEvent> events = pendingEvents.isEmpty() ? List.of() : new ArrayList<>(pendingEvents);
        pendingEvents.clear();
        List<Waiter> grants = pendingGrants.isEmpty() ? List.of() : new ArrayList<>(pendingGrants);
        List<LeaseImpl> leases = pendingLeases.isEmpty() ? List.of() : new ArrayList<>(pendingLeases);
        pendingGrants.clear();
        pendingLeases.clear();
        List<Waiter> failures = pendingFailures.isEmpty() ? List.of() : new ArrayList<>(pendingFailures);
        List<RuntimeException> causes = pendingCauses.isEmpty() ? List.of() : new ArrayList<>(pendingCauses);
        pendingFailures.clear();
        pendingCauses.clear();
        return () -> {
            for (GateEvent e : events) {
                fire(e);
            }
            for (int i = 0; i < grants.size(); i++) {
                if (!grants.get(i).future.complete(leases.get(i)) && grants.get(i).resume == null) {
                    leases.get(i).close(); // cancelled meanwhile: no lease left behind
                }
            }
            for (int i = 0; i < failures.size(); i++) {
                failures.get(i).future.completeExceptionally(causes.get(i));
            }
        };
    }
}
