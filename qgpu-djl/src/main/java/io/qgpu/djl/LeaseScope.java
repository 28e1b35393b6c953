package io.qgpu.djl;

import io.qgpu.core.gate.Gate;
import io.qgpu.core.gate.Lease;
import io.qgpu.core.gate.Tenant;

/**
 * The one way the adapter takes GPU time: at most one open lease of the tenant per thread, remembered
 * per thread; a unit of work entered while the thread holds it checkpoints that lease instead of acquiring
 * another (a second lease on the same thread would deadlock an offline tenant: the thread would block in
 * acquire while its first lease, still running, never reaches a checkpoint).
 *
 * <p>Thread safety: thread-safe; each thread sees only its own lease.
 */
final class LeaseScope {

    private final Gate gate;
    private final Tenant tenant;
    // Per instance on purpose (the check's advice, static, would mix scopes): the session is this scope's, one
    // tenant of one gate, and two scopes on one thread must not see each other's. What a thread keeps is bounded:
    // a QgpuDjl has one scope, and the entry is removed when the session is closed on its own thread (ended);
    // one closed from another thread stays, one per thread and scope, until that thread enters this scope again.
    @SuppressWarnings("ThreadLocalUsage")
    private final ThreadLocal<GateSession> current = new ThreadLocal<>();

    LeaseScope(Gate gate, Tenant tenant) {
        this.gate = gate;
        this.tenant = tenant;
    }

    Gate gate() {
        return gate;
    }

    Tenant tenant() {
        return tenant;
    }

    /** Opens a session: nested in this thread's open one (after a checkpoint of it), else with a new lease. */
    GateSession enter() throws InterruptedException {
        long t0 = gate.config().ticker().read();
        GateSession outer = current.get();
        if (outer != null && !outer.lease().isClosed()) {
            outer.lease().checkpoint();
            return new GateSession(this, outer.lease(), true, gate.config().ticker().read() - t0);
        }
        Lease lease = gate.acquire(tenant);
        GateSession s = new GateSession(this, lease, false, gate.config().ticker().read() - t0);
        current.set(s);
        return s;
    }

    /** Forgets {@code s} if it is this thread's open session (a close from another thread leaves it: it reads closed). */
    void ended(GateSession s) {
        if (current.get() == s) {
            current.remove();
        }
    }
}
