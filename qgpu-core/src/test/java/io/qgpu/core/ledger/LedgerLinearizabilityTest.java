package io.qgpu.core.ledger;

import io.qgpu.api.Claim;
import io.qgpu.api.Locality;
import io.qgpu.api.Placement;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jetbrains.kotlinx.lincheck.LinChecker;
import org.jetbrains.kotlinx.lincheck.annotations.Operation;
import org.jetbrains.kotlinx.lincheck.annotations.Param;
import org.jetbrains.kotlinx.lincheck.paramgen.IntGen;
import org.jetbrains.kotlinx.lincheck.strategy.stress.StressOptions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Lincheck checks that every concurrent history of reserve/release/query on a small ledger is
 * linearizable: equivalent to some sequential order of the same operations. (It found that a
 * reader could see a slice on the node before its tenant id was visible; see {@code Ledger.Entry}.)
 * Lincheck's model-checking mode cannot be used: it reads fields of records through Unsafe, which
 * the JDK refuses for records, and the whole model is records; the stress mode runs here.
 */
@Param(name = "t", gen = IntGen.class, conf = "0:3")
@Param(name = "g", gen = IntGen.class, conf = "0:1")
public class LedgerLinearizabilityTest {

    /**
     * Lincheck walks the fields of the test instance with Unsafe, which records refuse; the ledger
     * under test is therefore kept outside the instance, one per instance.
     */
    private static final Map<LedgerLinearizabilityTest, Ledger> LEDGERS = new ConcurrentHashMap<>();
    private final Ledger ledger;

    public LedgerLinearizabilityTest() {
        ledger = null;
        LEDGERS.put(this, Ledger.create(List.of(Fixtures.t4Node("n", 2))));
    }

    private Ledger ledger() {
        return LEDGERS.get(this);
    }

    private Placement placement(int t, int g) {
        // 6 GiB each: two fit on a 16 GiB GPU, the third does not; tenants 0 and 1 share an affinity label
        Claim.Builder b = Claim.builder("t" + t).memoryGiB(6).compute(40, 100);
        if (t < 2) {
            b.locality(Locality.none().withAffinity("pair"));
        }
        return Fixtures.on(b.build(), ledger().node("n").orElseThrow().node(), g);
    }

    @Operation
    public boolean reserve(@Param(name = "t") int t, @Param(name = "g") int g) {
        return ledger().reserve(placement(t, g)).reserved();
    }

    @Operation
    public String release(@Param(name = "t") int t) {
        return ledger().release("t" + t).map(p -> p.gpuUuids().get(0)).orElse(null);
    }

    @Operation
    public long memoryUsed(@Param(name = "g") int g) {
        return ledger().node("n").orElseThrow().gpu(g).memoryUsed();
    }

    @Operation
    public String holder(@Param(name = "t") int t) {
        return ledger().placement("t" + t).map(p -> p.gpuUuids().get(0)).orElse(null);
    }

    @AfterEach
    void forget() {
        LEDGERS.clear();
    }

    @Test
    void stress() {
        new LinChecker(LedgerLinearizabilityTest.class,
                new StressOptions().iterations(20).invocationsPerIteration(300).threads(3).actorsPerThread(3)).check();
    }
}
