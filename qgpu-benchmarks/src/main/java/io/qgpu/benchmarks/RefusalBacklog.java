package io.qgpu.benchmarks;

import io.qgpu.api.Claim;
import io.qgpu.api.PlacementResult;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementEngine;
import java.util.List;
import org.openjdk.jmh.annotations.Benchmark;

/**
 * What the refusal benchmarks ({@link RefusalBenchmark} and its {@code Shapes} and {@code Mix}) share: a nearly full
 * cluster, the claims it refuses, one claim that fits, and the two measured operations on them. Each subclass fills
 * the cluster its way in its {@code @Setup}, keeps the claims still refused with {@link #stillRefused}, and ends with
 * {@link #backlog}.
 *
 * <p>Thread safety: not thread-safe; a JMH {@code Scope.Benchmark} state driven by one benchmark thread.
 */
public abstract class RefusalBacklog {
    Ledger ledger;
    PlacementEngine engine;
    private Claim fits;
    private Claim[] refused;
    private int next;

    /** The cluster's ledger and the engine over it, before any claim is tried. */
    final void cluster(Ledger l, PlacementEngine e) {
        this.ledger = l;
        this.engine = e;
    }

    /** Whether the engine refuses {@code c} now; a claim that fits is placed and released again (dropped). */
    final boolean stillRefused(Claim c) {
        if (engine.place(c) instanceof PlacementResult.Placed) {
            ledger.release(c.tenantId());
            return false;
        }
        return true;
    }

    /**
     * The refused claims {@code refuse} cycles through, and a claim that fits on the same state.
     *
     * @param none what is missing, for the error when {@code still} is empty
     */
    final void backlog(List<Claim> still, String none) {
        if (still.isEmpty()) {
            throw new IllegalStateException(none);
        }
        refused = still.toArray(new Claim[0]);
        fits = RefusalBenchmark.fittingClaim(engine, ledger);
    }

    /** A claim that fits, placed and released. */
    @Benchmark
    public Object placeFits() {
        PlacementResult r = engine.place(fits);
        ledger.release(fits.tenantId());
        return r;
    }

    /** The next refused claim of the backlog, refused again. */
    @Benchmark
    public Object refuse() {
        Claim c = refused[next++ % refused.length];
        return engine.place(c);
    }
}
