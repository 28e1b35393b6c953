package io.qgpu.core.ledger.internal;

import io.qgpu.api.Placement;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.core.ledger.ReserveResult;
import java.util.List;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The entry protocol: which tenant ids are held, and the order in which a reservation or a release
 * of one id becomes visible. A reservation first claims its id with a pending {@link TenantEntry}
 * (which refuses a duplicate atomically), then installs its slices, then settles the entry; a
 * release wins the entry, takes the slices off, then removes the entry. Both settle their entry in
 * a {@code finally}: an exception thrown while installing or removing slices reaches the caller,
 * and no entry is left pending or releasing for readers to wait on.
 *
 * <p>Thread safety: thread-safe; one concurrent map of entries.
 */
public final class TenantTable {

    /** Installs a placement's slices on its node; the compare-and-set that installs them is its last step. */
    @FunctionalInterface
    public interface Installer {
        ReserveResult install(Placement placement);
    }

    /** Takes a committed placement's slices off its node. */
    @FunctionalInterface
    public interface Remover {
        void remove(Placement placement);
    }

    /**
     * Tenants a ledger is sized for per GPU when it is made: fractional sharing puts a few tenants on
     * a GPU, so a table sized for the GPUs alone would be copied into a larger one several times while
     * a cluster fills (each copy on the thread of the reservation that crossed the threshold).
     */
    public static final int EXPECTED_TENANTS_PER_GPU = 4;
    /** The most tenants a table is sized for up front (a larger ledger's table grows as it fills). */
    private static final int MAX_EXPECTED = 1 << 22;

    private final ConcurrentHashMap<String, TenantEntry> entries;

    /** A table with the map's default initial size. */
    public TenantTable() {
        this.entries = new ConcurrentHashMap<>();
    }

    /**
     * A table sized for {@code expected} tenants (at most {@value #MAX_EXPECTED}); it grows past them
     * as any map does.
     */
    public TenantTable(int expected) {
        this.entries = new ConcurrentHashMap<>(Math.max(16, Math.min(expected, MAX_EXPECTED)));
    }

    /**
     * Reserves the placement's tenant id and installs it with {@code installer}: a duplicate of a
     * committed id is refused; a duplicate of a pending id waits for that reservation to settle and
     * retries if it was refused. The entry is settled in a {@code finally}: committed if the
     * installer answered {@link ReserveResult.Reserved}, removed otherwise, also when it threw.
     */
    public ReserveResult reserve(Placement placement, Installer installer) {
        String id = placement.tenantId();
        TenantEntry entry = new TenantEntry(placement);
        TenantEntry held;
        while ((held = entries.putIfAbsent(id, entry)) != null) {
            if (held.await()) {
                return new ReserveResult.Refused(id, List.of(Reason.of(ReasonCode.DUPLICATE_TENANT, id,
                        "already reserved on " + held.placement().nodeName())));
            }
            // the other reservation of this id was refused or released: try again
        }
        boolean reserved = false;
        try {
            ReserveResult result = installer.install(placement);
            reserved = result.reserved();
            return result;
        } finally {
            if (!reserved) {
                entries.remove(id, entry);
            }
            entry.resolve(reserved);
        }
    }

    /**
     * Releases the tenant: the one caller that wins its committed entry takes the slices off with
     * {@code remover} and gets the placement; every other caller waits until that is done and gets
     * empty, as does a caller for an unknown id.
     */
    public Optional<Placement> release(String tenantId, Remover remover) {
        TenantEntry e = entries.get(tenantId);
        if (e == null || !e.startRelease()) {
            return Optional.empty();
        }
        try {
            remover.remove(e.placement());
        } finally {
            entries.remove(tenantId, e);
            e.released();
        }
        return Optional.of(e.placement());
    }

    /** The tenant's committed placement, waiting for an in-flight change of it to settle. */
    public Optional<Placement> committed(String tenantId) {
        TenantEntry e = entries.get(tenantId);
        return e != null && e.await() ? Optional.of(e.placement()) : Optional.empty();
    }

    /** Committed reservations by tenant id, sorted; unsettled entries are skipped (weakly consistent). */
    public SortedMap<String, Placement> committed() {
        TreeMap<String, Placement> out = new TreeMap<>();
        entries.forEach((id, e) -> {
            if (e.isCommitted()) {
                out.put(id, e.placement());
            }
        });
        return out;
    }

    /** The tenant's entry, settled or not, or {@code null}; for a batch commit (under the ledger's write lock). */
    TenantEntry entry(String tenantId) {
        return entries.get(tenantId);
    }

    /** Adds a pending entry for the placement; {@code null} when the id already has one (batch commit). */
    TenantEntry putPending(Placement placement) {
        TenantEntry e = new TenantEntry(placement);
        return entries.putIfAbsent(placement.tenantId(), e) == null ? e : null;
    }

    /** Ends a release that a batch commit started on {@code e}: removes the entry, then marks it gone. */
    void finishRelease(TenantEntry e) {
        entries.remove(e.placement().tenantId(), e);
        e.released();
    }

    /** Settles a pending entry of a batch commit: committed, or removed and gone. */
    void settle(TenantEntry e, boolean committed) {
        if (!committed) {
            entries.remove(e.placement().tenantId(), e);
        }
        e.resolve(committed);
    }

    /** Whether the id has an entry, settled or not. */
    public boolean contains(String tenantId) {
        return entries.containsKey(tenantId);
    }

    /** Adds a committed entry; only while no reservation can run (snapshot replay). */
    public void putCommitted(Placement placement) {
        TenantEntry e = new TenantEntry(placement);
        e.resolve(true);
        entries.put(placement.tenantId(), e);
    }

    /** Drops the tenant's entry; only while no reservation or release can run (structural change). */
    public void forget(String tenantId) {
        entries.remove(tenantId);
    }

    /** Number of entries, settled or not. */
    public int size() {
        return entries.size();
    }
}
