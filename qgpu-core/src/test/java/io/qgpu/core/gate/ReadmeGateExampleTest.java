package io.qgpu.core.gate;

import static io.qgpu.core.gate.FakeClock.MS;
import static io.qgpu.core.gate.FakeClock.S;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.IsolationPolicy;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * What the README's gate example says: under {@code elastic} the online tenant's limit of 60% holds
 * (after 6 s of a 10 s window it gets no lease at once), and under {@code best-effort}, the default
 * policy, the same limit does nothing.
 */
class ReadmeGateExampleTest {

    private static final long T0 = 1_000 * S;

    private static boolean leaseAtOnceAfterSixSeconds(IsolationPolicy policy) {
        FakeClock clock = new FakeClock(T0);
        try (Gate gpu0 = Gate.create("GPU-0", clock.config().policy(policy).window(Duration.ofSeconds(10))
                .minSlice(Duration.ofMillis(1)).usageReportInterval(Duration.ZERO).build())) {
            Tenant chat = gpu0.register(GateTenantSpec.online("chat").request(20).limit(60).build());
            Lease first = gpu0.tryAcquire(chat).orElseThrow();
            clock.at(T0 + 6 * S);
            first.close();
            java.util.Optional<Lease> second = gpu0.tryAcquire(chat);
            second.ifPresent(Lease::close);
            return second.isPresent();
        }
    }

    @Test
    void theLimitHoldsUnderElastic() {
        assertFalse(leaseAtOnceAfterSixSeconds(IsolationPolicy.ELASTIC), "60% of 10 s used: chat must wait");
    }

    @Test
    void theLimitDoesNothingUnderBestEffort() {
        assertTrue(leaseAtOnceAfterSixSeconds(IsolationPolicy.BEST_EFFORT), "best-effort ignores the limit");
    }
}
