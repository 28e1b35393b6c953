package io.qgpu.core.gate;

import static io.qgpu.core.gate.FakeClock.MS;
import static io.qgpu.core.gate.FakeClock.S;
import static org.junit.jupiter.api.Assertions.*;

import io.qgpu.api.IsolationPolicy;
import io.qgpu.api.spi.ProcessUsageSample;
import io.qgpu.api.spi.ProcessUsageSource;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Listener SPI and the NVML usage correction. */
@Timeout(60) // a hang guard only; no test depends on wall time for its verdict
class GateObservabilityTest {

    private static final long T0 = 11 * S;

    @Test
    void eventsFlowOnlyToRegisteredListenersAndAFailingListenerHurtsNoOne() throws Exception {
        FakeClock clock = new FakeClock(T0);
        Gate gate = Gate.create("GPU-o", clock.config().usageReportInterval(Duration.ofSeconds(1)).build());
        Tenant chat = gate.register(GateTenantSpec.online("chat").build());
        assertFalse(gate.hasListeners());
        gate.acquire(chat).close();

        AtomicInteger failing = new AtomicInteger();
        GateListener bad = e -> {
            failing.incrementAndGet();
            throw new IllegalStateException("listener bug");
        };
        RecordingListener good = new RecordingListener();
        gate.addListener(bad);
        gate.addListener(good);
        assertTrue(gate.hasListeners());
        Lease l = gate.acquire(chat);
        clock.at(T0 + 2 * MS);
        l.close();
        assertEquals(2, failing.get());
        assertEquals(List.of(new GateEvent.LeaseGranted("GPU-o", "chat", T0, 0),
                new GateEvent.LeaseReleased("GPU-o", "chat", T0 + 2 * MS, 2 * MS)), good.all());

        clock.at(T0 + S);
        GateEvent.UsageReport r = good.of(GateEvent.UsageReport.class).get(0);
        assertEquals("chat", r.tenant());
        assertEquals(2 * MS, r.usageNanos());
        assertEquals(2 * MS, r.correctedUsageNanos());
        assertEquals(1.0, r.correctionFactor());
        assertEquals(0.0002, r.share(), 1e-12);

        gate.removeListener(bad);
        gate.removeListener(good);
        gate.removeListener(good);
        assertFalse(gate.hasListeners());
        int before = good.all().size();
        gate.acquire(chat).close();
        clock.at(T0 + 3 * S);
        assertEquals(before, good.all().size());
        gate.close();
    }

    /** A driver that reports this process at a fixed SM utilization every 100 ms of the fake clock. */
    private static final class FakeNvml implements ProcessUsageSource {
        final FakeClock clock;
        final long pid;
        volatile int percent;
        long lastMicros;
        final List<ProcessUsageSample> emitted = new ArrayList<>();

        FakeNvml(FakeClock clock, long pid) {
            this.clock = clock;
            this.pid = pid;
        }

        @Override
        public synchronized List<ProcessUsageSample> samples(String gpuUuid, long sinceMicros) {
            long nowMicros = clock.read() / 1000;
            if (lastMicros == 0) {
                lastMicros = nowMicros;
            }
            while (lastMicros + 100_000 <= nowMicros) {
                lastMicros += 100_000;
                emitted.add(new ProcessUsageSample(gpuUuid, pid, lastMicros, percent, 0, -1));
                emitted.add(new ProcessUsageSample(gpuUuid, pid + 1, lastMicros, 99, 0, -1)); // someone else
            }
            List<ProcessUsageSample> out = new ArrayList<>();
            for (ProcessUsageSample s : emitted) {
                if (s.timestampMicros() > sinceMicros) {
                    out.add(s);
                }
            }
            return out;
        }
    }

    @Test
    void nvmlSamplesCorrectUsageAndTheLimitFollows() throws Exception {
        FakeClock clock = new FakeClock(T0);
        FakeNvml nvml = new FakeNvml(clock, 4242);
        Gate gate = Gate.create("GPU-n", clock.config().policy(IsolationPolicy.ELASTIC)
                .usageSource(nvml).pid(4242).usageReportInterval(Duration.ofSeconds(1)).build());
        Tenant train = gate.register(GateTenantSpec.offline("train").limit(40).build());
        nvml.samples("GPU-n", 0);
        // leases held all the time, but the GPU measured busy only half of it (host work inside leases)
        nvml.percent = 50;
        Lease l = gate.acquire(train);
        for (int i = 1; i <= 30; i++) {
            clock.at(T0 + i * 100 * MS);
            l.checkpoint();
        }
        assertEquals(0.5, gate.correctionFactor(), 1e-9);
        TenantUsage u = gate.usage(train);
        assertEquals(3 * S, u.usageNanos());
        assertEquals(1_500 * MS, u.correctedUsageNanos());
        // the 4 s limit applies to corrected usage: 8 s of leases fit in the window
        for (int i = 31; i < 80; i++) {
            clock.at(T0 + i * 100 * MS);
            assertFalse(l.shouldYield(), "at " + i);
            l.checkpoint();
        }
        clock.at(T0 + 8 * S);
        assertTrue(l.shouldYield());
        l.close();
        gate.close();
    }

    /**
     * Leases that open and close between two reports count toward the correction: the GPU measured
     * busy 20% of a second (180 ms in the nine sample periods after the first sample) while leases of
     * 360 ms were held and closed, so the factor is 0.5, and the usage reports and snapshots carry
     * the corrected usage.
     */
    @Test
    void leasesClosedBetweenTwoReportsCountTowardTheCorrection() throws Exception {
        FakeClock clock = new FakeClock(T0);
        FakeNvml nvml = new FakeNvml(clock, 4242);
        nvml.percent = 20;
        Gate gate = Gate.create("GPU-c", clock.config().window(Duration.ofSeconds(10)).usageSource(nvml).pid(4242)
                .usageReportInterval(Duration.ofSeconds(1)).deadOwnerTimeout(Duration.ofHours(1)).build());
        Tenant chat = gate.register(GateTenantSpec.online("chat").build());
        clock.at(T0 + S);                                        // the first report: the baseline
        Lease first = gate.tryAcquire(chat).orElseThrow();
        clock.at(T0 + S + 200 * MS);
        first.close();
        Lease second = gate.tryAcquire(chat).orElseThrow();
        clock.at(T0 + S + 360 * MS);
        second.close();                                          // 360 ms of leases, all closed
        RecordingListener events = new RecordingListener();
        gate.addListener(events);
        clock.at(T0 + 2 * S);
        assertEquals(0.5, gate.correctionFactor(), 1e-9);
        GateEvent.UsageReport r = events.of(GateEvent.UsageReport.class).get(0);
        assertEquals(360 * MS, r.usageNanos());
        assertEquals(180 * MS, r.correctedUsageNanos());
        assertEquals(0.5, r.correctionFactor(), 1e-9);
        TenantUsage u = gate.usage(chat);
        assertEquals(360 * MS, u.usageNanos());
        assertEquals(180 * MS, u.correctedUsageNanos());
        assertEquals(360 * MS, u.totalLeaseNanos());
        gate.close();
    }

    @Test
    void withoutASourceTheFactorStaysOneAndAFailingSourceKeepsTheLastFactor() throws Exception {
        FakeClock clock = new FakeClock(T0);
        Gate plain = Gate.create("GPU-1", clock.config().build());
        clock.at(T0 + 5 * S);
        assertEquals(1.0, plain.correctionFactor());
        plain.close();

        ProcessUsageSource broken = (gpu, since) -> {
            throw new IllegalStateException("driver gone");
        };
        Gate g = Gate.create("GPU-2", clock.config().usageSource(broken).build());
        Tenant t = g.register(GateTenantSpec.online("t").build());
        clock.at(T0 + 10 * S);
        assertEquals(1.0, g.correctionFactor());
        g.acquire(t).close();
        g.close();
    }
}
