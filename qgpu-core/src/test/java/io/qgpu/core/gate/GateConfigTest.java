package io.qgpu.core.gate;

import static org.junit.jupiter.api.Assertions.*;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.IsolationPolicy;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Ticker;
import io.qgpu.api.spi.ProcessUsageSource;
import io.qgpu.core.compute.TokenSchedulerConfig;
import io.qgpu.core.preempt.PreemptionConfig;
import java.time.Duration;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/** GateConfig and GateTenantSpec: defaults, order-independent setters, typed errors, value semantics. */
class GateConfigTest {

    private static final Duration HUGE = Duration.ofSeconds(Long.MAX_VALUE);

    @Test
    void defaults() {
        GateConfig c = GateConfig.ofDefaults();
        assertEquals(IsolationPolicy.BEST_EFFORT, c.policy());
        assertEquals(TokenSchedulerConfig.ofDefaults(), c.token());
        assertEquals(10_000_000_000L, c.windowNanos());
        assertEquals(PreemptionConfig.ofDefaults(), c.preemption());
        assertEquals(1_000_000L, c.minSliceNanos());
        assertEquals(1_000_000_000L, c.deadOwnerTimeoutNanos());
        assertEquals(1_000_000_000L, c.usageReportIntervalNanos());
        assertTrue(c.usageSource().isEmpty());
        assertTrue(c.timer().isEmpty());
        assertEquals(ProcessHandle.current().pid(), c.pid());
        assertNotNull(c.ticker());
    }

    @Test
    void theWindowDoesNotDependOnCallOrder() {
        TokenSchedulerConfig token = TokenSchedulerConfig.custom().window(Duration.ofSeconds(2))
                .baseQuota(Duration.ofMillis(50)).minQuota(Duration.ofMillis(10)).build();
        GateConfig a = GateConfig.custom().window(Duration.ofSeconds(2)).token(token).build();
        GateConfig b = GateConfig.custom().token(token).window(Duration.ofSeconds(2)).build();
        assertEquals(a, b);
        assertEquals(token, a.token());
        // disagreeing values are refused whatever the order, naming both
        for (GateConfig.Builder builder : List.of(
                GateConfig.custom().window(Duration.ofSeconds(3)).token(token),
                GateConfig.custom().token(token).window(Duration.ofSeconds(3)))) {
            InvalidValueException e = assertThrows(InvalidValueException.class, builder::build);
            assertEquals("gateConfig.window", e.field());
            assertTrue(e.getMessage().contains("gateConfig.token"), e.getMessage());
        }
    }

    @Test
    void aWindowAloneCutsTheDefaultQuotasToIt() {
        GateConfig c = GateConfig.custom().window(Duration.ofMillis(80)).minSlice(Duration.ofMillis(80)).build();
        assertEquals(80_000_000L, c.windowNanos());
        assertEquals(80_000_000L, c.token().baseQuotaNanos());
        assertEquals(80_000_000L, c.token().minQuotaNanos());
        GateConfig wide = GateConfig.custom().window(Duration.ofMillis(300)).build();
        assertEquals(250_000_000L, wide.token().baseQuotaNanos());
        assertEquals(100_000_000L, wide.token().minQuotaNanos());
        GateConfig mid = GateConfig.custom().window(Duration.ofMillis(150)).build();
        assertEquals(150_000_000L, mid.token().baseQuotaNanos());
        assertEquals(100_000_000L, mid.token().minQuotaNanos());
        GateConfig exact = GateConfig.custom().window(Duration.ofMillis(100)).build();
        assertEquals(100_000_000L, exact.token().baseQuotaNanos());
        assertEquals(100_000_000L, exact.token().minQuotaNanos());
    }

    @Test
    void preemptionSettingsDoNotDependOnCallOrder() {
        PreemptionConfig p = PreemptionConfig.custom().preemptionBound(Duration.ofMillis(5))
                .releaseDelay(Duration.ofMillis(7)).build();
        GateConfig a = GateConfig.custom().releaseDelay(Duration.ofMillis(7)).preemption(p)
                .preemptionBound(Duration.ofMillis(5)).build();
        GateConfig b = GateConfig.custom().preemption(p).build();
        assertEquals(b, a);
        GateConfig c = GateConfig.custom().preemptionBound(Duration.ofMillis(5)).releaseDelay(Duration.ofMillis(7)).build();
        assertEquals(p, c.preemption());
        GateConfig d = GateConfig.custom().releaseDelay(Duration.ofMillis(7)).build();
        assertEquals(7_000_000L, d.preemption().releaseDelayNanos());
        assertEquals(PreemptionConfig.ofDefaults().preemptionBoundNanos(), d.preemption().preemptionBoundNanos());
        InvalidValueException e = assertThrows(InvalidValueException.class,
                () -> GateConfig.custom().releaseDelay(Duration.ofMillis(8)).preemption(p).build());
        assertEquals("gateConfig.releaseDelay", e.field());
        e = assertThrows(InvalidValueException.class,
                () -> GateConfig.custom().preemption(p).preemptionBound(Duration.ofMillis(6)).build());
        assertEquals("gateConfig.preemptionBound", e.field());
    }

    @Test
    void eachSetterChecksItsOwnValue() {
        GateConfig.Builder b = GateConfig.custom();
        assertField("gateConfig.window", () -> b.window(Duration.ZERO));
        assertField("gateConfig.window", () -> b.window(null));
        assertField("gateConfig.window", () -> b.window(HUGE));
        assertField("gateConfig.preemptionBound", () -> b.preemptionBound(Duration.ZERO));
        assertField("gateConfig.releaseDelay", () -> b.releaseDelay(Duration.ofNanos(-1)));
        assertField("gateConfig.minSlice", () -> b.minSlice(Duration.ZERO));
        assertField("gateConfig.deadOwnerTimeout", () -> b.deadOwnerTimeout(Duration.ofMillis(-1)));
        assertField("gateConfig.deadOwnerTimeout", () -> b.deadOwnerTimeout(HUGE));
        assertField("gateConfig.usageReportInterval", () -> b.usageReportInterval(Duration.ofMillis(-1)));
        assertField("gateConfig.usageReportInterval", () -> b.usageReportInterval(HUGE));
        assertField("gateConfig.pid", () -> b.pid(-1));
        assertField("gateConfig.policy", () -> b.policy(null));
        assertField("gateConfig.token", () -> b.token(null));
        assertField("gateConfig.preemption", () -> b.preemption(null));
        assertField("gateConfig.usageSource", () -> b.usageSource(null));
        assertField("gateConfig.ticker", () -> b.ticker(null));
        assertField("gateConfig.timer", () -> b.timer(null));
        // the builder is unharmed by the refusals
        assertEquals(GateConfig.ofDefaults().windowNanos(), b.build().windowNanos());
        assertEquals(0, GateConfig.custom().releaseDelay(Duration.ZERO).build().preemption().releaseDelayNanos());
        assertEquals(0, GateConfig.custom().usageReportInterval(Duration.ZERO).build().usageReportIntervalNanos());
        assertEquals(0, GateConfig.custom().pid(0).build().pid());
        GateConfig oneNano = GateConfig.custom().window(Duration.ofNanos(1)).minSlice(Duration.ofNanos(1)).build();
        assertEquals(1, oneNano.windowNanos());
        assertEquals(1, oneNano.minSliceNanos());
        InvalidValueException e = assertThrows(InvalidValueException.class,
                () -> GateConfig.custom().window(Duration.ofMillis(5)).minSlice(Duration.ofMillis(6)).build());
        assertEquals("gateConfig.minSlice", e.field());
    }

    private static void assertField(String field, org.junit.jupiter.api.function.Executable call) {
        InvalidValueException e = assertThrows(InvalidValueException.class, call);
        assertEquals(field, e.field());
    }

    @Test
    void valueSemanticsAndToBuilder() {
        ProcessUsageSource source = (gpu, since) -> List.of();
        Ticker ticker = () -> 42;
        ManualGateTimer timer = new ManualGateTimer(ticker);
        GateConfig c = GateConfig.custom().policy(IsolationPolicy.ELASTIC).window(Duration.ofSeconds(4))
                .minSlice(Duration.ofMillis(3)).deadOwnerTimeout(Duration.ofMillis(700))
                .usageReportInterval(Duration.ofMillis(250)).usageSource(source).pid(7).ticker(ticker)
                .timer(timer).releaseDelay(Duration.ofMillis(9)).preemptionBound(Duration.ofMillis(4)).build();
        assertEquals(IsolationPolicy.ELASTIC, c.policy());
        assertEquals(3_000_000L, c.minSliceNanos());
        assertEquals(700_000_000L, c.deadOwnerTimeoutNanos());
        assertEquals(250_000_000L, c.usageReportIntervalNanos());
        assertSame(source, c.usageSource().orElseThrow());
        assertSame(timer, c.timer().orElseThrow());
        assertSame(ticker, c.ticker());
        assertEquals(7, c.pid());
        GateConfig copy = c.toBuilder().build();
        assertEquals(c, copy);
        assertEquals(c.hashCode(), copy.hashCode());
        assertEquals(c.toString(), copy.toString());
        assertEquals(c, c);
        assertNotEquals(c, "a config");
        assertNotEquals(c, null);
        List<Function<GateConfig.Builder, GateConfig.Builder>> changes = List.of(
                x -> x.policy(IsolationPolicy.BEST_EFFORT),
                x -> x.token(c.token().toBuilder().window(Duration.ofSeconds(5)).build()),
                x -> x.preemption(PreemptionConfig.ofDefaults()),
                x -> x.minSlice(Duration.ofMillis(2)),
                x -> x.deadOwnerTimeout(Duration.ofMillis(701)),
                x -> x.usageReportInterval(Duration.ofMillis(251)),
                x -> x.usageSource((gpu, since) -> List.of()),
                x -> x.pid(8),
                x -> x.ticker(() -> 43),
                x -> x.timer(new ManualGateTimer(ticker)));
        for (Function<GateConfig.Builder, GateConfig.Builder> change : changes) {
            GateConfig other = change.apply(c.toBuilder()).build();
            assertNotEquals(c, other, other.toString());
            assertNotEquals(c.toString(), other.toString());
        }
        String s = c.toString();
        for (String part : List.of("policy=", "token=", "preemption=", "minSliceNanos=3000000",
                "deadOwnerTimeoutNanos=700000000", "usageReportIntervalNanos=250000000", "usageSource=", "pid=7",
                "ticker=", "timer=")) {
            assertTrue(s.contains(part), s);
        }
    }

    @Test
    void tenantSpecs() {
        GateTenantSpec on = GateTenantSpec.online("chat").request(20).limit(60).build();
        assertEquals(new GateTenantSpec("chat", PriorityClass.ONLINE, 20, 60), on);
        assertEquals(new GateTenantSpec("t", PriorityClass.OFFLINE, 0, 100), GateTenantSpec.offline("t").build());
        assertEquals(new GateTenantSpec("t", PriorityClass.OFFLINE, 100, 100),
                GateTenantSpec.builder("t", PriorityClass.OFFLINE).request(100).build());
        assertEquals(1, GateTenantSpec.online("t").limit(1).build().limitPercent());
        assertEquals(0, GateTenantSpec.online("t").request(0).build().requestPercent());
        assertField("tenantSpec.requestPercent", () -> GateTenantSpec.online("a").request(101));
        assertField("tenantSpec.requestPercent", () -> GateTenantSpec.online("a").request(-1));
        assertField("tenantSpec.limitPercent", () -> GateTenantSpec.online("a").limit(101));
        assertField("tenantSpec.requestPercent", () -> GateTenantSpec.online("a").request(61).limit(60).build());
        assertField("tenantSpec.requestPercent", () -> new GateTenantSpec("a", PriorityClass.ONLINE, 61, 60));
        assertField("tenantSpec.limitPercent", () -> new GateTenantSpec("a", PriorityClass.ONLINE, 0, 0));
        assertField("tenantSpec.requestPercent", () -> new GateTenantSpec("a", PriorityClass.ONLINE, -1, 10));
        assertField("tenantSpec.name", () -> new GateTenantSpec(" ", PriorityClass.ONLINE, 0, 10));
        assertField("tenantSpec.priority", () -> new GateTenantSpec("a", null, 0, 10));
        assertField("tenantSpec.priority", () -> GateTenantSpec.builder("a", null));
    }
}
