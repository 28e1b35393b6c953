package io.qgpu.core.compute;

import static io.qgpu.core.compute.ManualTicker.ms;
import static org.junit.jupiter.api.Assertions.*;

import io.qgpu.api.InvalidValueException;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** What the token scheduler and the usage window show of their state, and the bounds of a share in percent. */
class TokenSchedulerViewsTest {

    private final ManualTicker clock = new ManualTicker(0);

    @Test
    void waitingIsInRequestOrderNotRegistrationOrder() {
        TokenScheduler s = TokenScheduler.create(TokenSchedulerConfig.ofDefaults(), clock);
        s.addTenant("a", Share.unlimited());
        s.addTenant("b", Share.unlimited());
        s.addTenant("c", Share.unlimited());
        s.request("c");
        s.request("a");
        s.request("b");
        assertEquals(List.of("c", "a", "b"), s.waiting());
        assertEquals(Share.unlimited(), s.share("b"));
        assertEquals(ms(250), s.quotaNanos("a"), "the base quota before any grant");
    }

    @Test
    void aRemovedTenantLeavesNoUsageBehind() {
        TokenScheduler s = TokenScheduler.create(TokenSchedulerConfig.ofDefaults(), clock);
        s.addTenant("a", Share.unlimited());
        s.request("a");
        assertInstanceOf(TokenDecision.Granted.class, s.schedule());
        clock.advance(ms(40));
        s.release("a", 0);
        assertEquals(ms(40), s.usageNanos("a"));
        s.removeTenant("a");
        s.addTenant("a", Share.unlimited());
        assertEquals(0, s.usageNanos("a"), "usage of the removed tenant was kept");
    }

    @Test
    void theUsageWindowShowsItsWindowAndTenants() {
        UsageWindow w = new UsageWindow(Duration.ofSeconds(2));
        assertEquals(2_000_000_000L, w.windowNanos());
        w.record("x", 0, 10);
        w.record("y", 5, 10);
        assertEquals(Set.of("x", "y"), w.tenants());
    }

    @Test
    void sharePercentBoundsAreInclusive() {
        assertEquals(Share.of(0, 0.01), Share.ofPercent(0, 1));
        assertEquals(Share.of(1.0, 1.0), Share.ofPercent(100, 100));
        assertEquals(Share.of(0.3, 0.3), Share.ofPercent(30, 30));
        assertThrows(InvalidValueException.class, () -> Share.ofPercent(-1, 50));
        assertThrows(InvalidValueException.class, () -> Share.ofPercent(101, 100));
        assertThrows(InvalidValueException.class, () -> Share.ofPercent(0, 0));
        assertThrows(InvalidValueException.class, () -> Share.ofPercent(0, 101));
        assertThrows(InvalidValueException.class, () -> Share.ofPercent(31, 30));
    }
}
