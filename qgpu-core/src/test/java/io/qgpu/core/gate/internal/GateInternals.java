package io.qgpu.core.gate.internal;

import io.qgpu.core.gate.Gate;
import io.qgpu.core.gate.Tenant;
import java.lang.reflect.Field;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Test-only access to a gate's internals (its lock, its waiter count, a tenant's window), so that main
 * code carries no hooks for tests. The gate's core is read from the facade's private field.
 */
public final class GateInternals {

    private GateInternals() {}

    static GateCore core(Gate gate) {
        try {
            Field f = Gate.class.getDeclaredField("core");
            f.setAccessible(true);
            return (GateCore) f.get(gate);
        } catch (ReflectiveOperationException e) {
            throw new AssertionError(e);
        }
    }

    /** The gate's lock (for tests that hold it to show a path takes no lock). */
    public static ReentrantLock lock(Gate gate) {
        return core(gate).lock;
    }

    /** Blocked acquires plus parked leases. */
    public static int waiterCount(Gate gate) {
        return core(gate).waiters;
    }

    /** The tenant's state behind its handle. */
    public static TenantState state(Tenant tenant) {
        return (TenantState) tenant;
    }

    /** Chunks the tenant's usage window's arrays can hold now (its memory: three longs each). */
    public static int usageWindowCapacity(Tenant tenant) {
        TenantState t = state(tenant);
        t.books.lock();
        try {
            return t.window.capacity();
        } finally {
            t.books.unlock();
        }
    }
}
