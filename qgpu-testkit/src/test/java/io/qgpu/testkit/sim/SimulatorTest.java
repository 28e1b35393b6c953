package io.qgpu.testkit.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.IsolationPolicy;
import io.qgpu.core.compute.ComputeEngine;
import io.qgpu.core.compute.TokenDecision;
import io.qgpu.core.preempt.GpuMode;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class SimulatorTest {

    private static final long S = 1_000_000_000L;

    private static Scenario onlineOffline(long seed) {
        return Claims.onlineOffline(Dist.uniform(Duration.ofNanos(10_000), Duration.ofMillis(2))).withSeed(seed);
    }

    @Test
    void theSameSeedGivesTheSameRunAndAnotherSeedAnotherOne() {
        Simulator sim = Simulator.standard().withTrace(true);
        SimResult a = sim.run(onlineOffline(7));
        SimResult b = sim.run(onlineOffline(7));
        assertEquals(a.tenants(), b.tenants());
        assertEquals(a.gpus(), b.gpus());
        assertEquals(a.trace(), b.trace());
        assertEquals(a.events(), b.events());
        SimResult c = sim.run(onlineOffline(8));
        assertNotEquals(a.trace(), c.trace());
    }

    /** M/M/1: Poisson arrivals at 20/s, exponential service of 20 ms, FIFO: response time ~ Exp(50 - 20). */
    @Test
    void anOpenLoopTenantAloneBehavesLikeAnMm1Queue() {
        TenantSpec t = TenantSpec.online("infer", new Workload.OpenLoop(20, Dist.exponential(Duration.ofMillis(20))));
        Scenario s = Scenario.builder("mm1").duration(Duration.ofSeconds(600)).seed(3)
                .gpu(GpuSpec.of("gpu0", IsolationPolicy.BEST_EFFORT, List.of(t))).build();
        TenantMetrics m = Simulator.standard().run(s).tenant("infer");
        assertEquals(12_000, m.requestsCompleted(), 12_000 * 0.05, "arrivals at the rate");
        double meanResponse = 1.0 / (50 - 20);
        assertEquals(Math.log(2) * meanResponse, m.latencyP50Nanos() / 1e9, 0.1 * Math.log(2) * meanResponse, "median");
        assertEquals(Math.log(100) * meanResponse, m.latencyP99Nanos() / 1e9, 0.15 * Math.log(100) * meanResponse, "p99");
        assertEquals(0.4, m.share(), 0.02, "utilization rho = 0.4");
    }

    @Test
    void trainingIterationsAlternateComputeAndDataLoading() {
        TenantSpec t = TenantSpec.offline("train", new Workload.Training(Dist.constant(Duration.ofMillis(100)),
                Dist.constant(Duration.ofMillis(20)), 10));
        Scenario s = Scenario.builder("train").duration(Duration.ofSeconds(60)).seed(1)
                .gpu(GpuSpec.of("gpu0", IsolationPolicy.BEST_EFFORT, List.of(t))).build();
        SimResult r = Simulator.standard().withTrace(true).run(s);
        assertEquals(500, r.tenant("train").iterations(), 1);
        assertEquals(100.0 / 120.0, r.tenant("train").share(), 0.005);
        assertTrue(r.trace().stream().anyMatch(e -> e.kind() == TraceKind.ITERATION && e.detail().equals("n=1 took=100ms")),
                "an iteration alone takes its compute time");
    }

    @Test
    void onlineTenantsShareTheGpuEquallyWithoutPolicy() {
        Workload busy = Claims.busy(Duration.ofMillis(1), Duration.ofMillis(5));
        Scenario s = Scenario.builder("ps").duration(Duration.ofSeconds(20)).seed(2)
                .gpu(GpuSpec.of("gpu0", IsolationPolicy.FIXED_SHARE, List.of(TenantSpec.online("a", busy), TenantSpec.online("b", busy),
                        TenantSpec.offline("off", busy).withShare(50, 50))))
                .build();
        SimResult r = Simulator.standard().run(s);
        assertEquals(0.5, r.tenant("a").share(), 0.01);
        assertEquals(0.5, r.tenant("b").share(), 0.01);
        assertEquals(0.0, r.tenant("off").share(), 1e-9, "offline never runs while online is always busy");
        assertEquals(20 * S, (long) r.gpu("gpu0").modeNanos().get(GpuMode.ONLINE), 1);
    }

    @Test
    void launchSlicingOverrunsAndTheOverrunIsTakenOffTheNextGrantNotAddedToTheQuota() {
        TenantSpec t = TenantSpec.offline("long-kernels", Claims.busy(Duration.ofMillis(400), Duration.ofMillis(400)));
        TenantSpec u = TenantSpec.offline("short-kernels", Claims.busy(Duration.ofMillis(1), Duration.ofMillis(1)));
        Scenario s = Scenario.builder("launch").duration(Duration.ofSeconds(30)).seed(2)
                .gpu(GpuSpec.of("gpu0", IsolationPolicy.BEST_EFFORT, List.of(t, u)).withSlicing(Slicing.LAUNCH)).build();
        SimResult r = Simulator.standard().withTrace(true).run(s);
        List<TraceEvent> releases = r.trace().stream()
                .filter(e -> e.kind() == TraceKind.RELEASE && e.tenant().equals("long-kernels")).toList();
        assertTrue(releases.get(0).detail().contains("overrun=150ms"), releases.get(0).detail());
        assertTrue(releases.get(0).detail().endsWith("next-quota=250ms"), "a grant used to its end keeps the quota: "
                + releases.get(0).detail());
        assertTrue(releases.get(releases.size() - 1).detail().contains("next-quota=250ms"), "the quota does not grow with overruns");
        List<TraceEvent> grants = r.trace().stream()
                .filter(e -> e.kind() == TraceKind.GRANT && e.tenant().equals("long-kernels")).toList();
        assertEquals("quota=250ms", grants.get(0).detail());
        assertEquals("quota=250ms length=125ms", grants.get(1).detail(), "the 150 ms overrun is taken off, at most half the quota");
        assertEquals(0.5, r.tenant("long-kernels").share(), 0.02, "usage counts the overrun, so shares stay fair");
    }

    @Test
    void shareSeriesAddUpToTheGpusBusyTime() {
        SimResult r = Simulator.standard().run(onlineOffline(5));
        ShareSeries series = r.shares();
        assertEquals(100, series.buckets());
        double total = 0;
        for (int i = 0; i < series.buckets(); i++) {
            double sum = 0;
            for (String t : series.tenants()) {
                sum += series.share(t, i);
            }
            assertTrue(sum <= 1.0 + 1e-9, "bucket " + i + " sums to " + sum);
            total += sum * series.bucketNanos();
        }
        assertEquals(r.gpu("gpu0").utilization() * r.scenario().durationNanos(), total, 1e3);
        assertEquals(List.of("infer", "train", "prep"), series.tenants());
    }

    @Test
    void theTraceIsInTimeOrderAndShowsTheModeChanges() {
        SimResult r = Simulator.standard().withTrace(true).run(onlineOffline(5).withDuration(Duration.ofSeconds(10)));
        List<TraceEvent> trace = r.trace();
        for (int i = 1; i < trace.size(); i++) {
            assertTrue(trace.get(i - 1).atNanos() <= trace.get(i).atNanos());
        }
        assertTrue(trace.stream().anyMatch(e -> e.kind() == TraceKind.MODE && e.detail().equals("OFFLINE->PREEMPTING")));
        assertTrue(trace.stream().anyMatch(e -> e.kind() == TraceKind.MODE && e.detail().equals("RELEASING->OFFLINE")));
        assertTrue(trace.stream().anyMatch(e -> e.kind() == TraceKind.REQUEST_DONE && e.tenant().equals("infer")));
        assertEquals("time_s,gpu,tenant,event,detail", TraceEvent.csvHeader());
        assertEquals("1.500000,gpu0,-,MODE,OFFLINE->ONLINE",
                new TraceEvent(1_500_000_000L, "gpu0", "-", TraceKind.MODE, "OFFLINE->ONLINE").toCsv());
        assertTrue(Simulator.standard().run(onlineOffline(5)).trace().isEmpty(), "no trace unless asked");
    }

    @Test
    void anEngineThatWaitsForTheCurrentTimeIsReported() {
        SimEngines stuck = SimEngines.standard().withCompute((policy, config, ticker) -> {
            ComputeEngine real = ComputeEngine.create(policy, config, ticker);
            return new BrokenEngines.Delegating(real) {
                @Override
                public TokenDecision schedule() {
                    return new TokenDecision.WaitUntil(ticker.read());
                }
            };
        });
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> new Simulator(stuck).run(Claims.bestEffort(2, Slicing.DRIVER)));
        assertTrue(e.getMessage().contains("not after now"), e.getMessage());
    }

    @Test
    void badScenariosAreRefusedNamingTheField() {
        Workload w = Claims.busy(Duration.ofMillis(1), Duration.ofMillis(2));
        assertEquals("gpus[gpu0].tenants[a].request", assertThrows(InvalidValueException.class,
                () -> GpuSpec.of("gpu0", IsolationPolicy.FIXED_SHARE, List.of(TenantSpec.offline("a", w)))).field());
        assertEquals("gpus[gpu0].tenants", assertThrows(InvalidValueException.class,
                () -> GpuSpec.of("gpu0", IsolationPolicy.BURST_SHARE, List.of(TenantSpec.offline("a", w).withShare(60, 100),
                        TenantSpec.offline("b", w).withShare(50, 100)))).field());
        assertEquals("gpus[gpu0].tenants[a].id", assertThrows(InvalidValueException.class,
                () -> GpuSpec.of("gpu0", IsolationPolicy.BEST_EFFORT, List.of(TenantSpec.offline("a", w), TenantSpec.offline("a", w)))).field());
        GpuSpec g0 = GpuSpec.of("gpu0", IsolationPolicy.BEST_EFFORT, List.of(TenantSpec.offline("a", w)));
        GpuSpec g1 = GpuSpec.of("gpu1", IsolationPolicy.BEST_EFFORT, List.of(TenantSpec.offline("a", w)));
        assertEquals("scenario.gpus[gpu1].tenants[a].id", assertThrows(InvalidValueException.class,
                () -> Scenario.builder("x").gpu(g0).gpu(g1).build()).field());
        assertEquals("scenario.bucket", assertThrows(InvalidValueException.class,
                () -> Scenario.builder("x").duration(Duration.ofSeconds(1)).bucket(Duration.ofSeconds(2)).gpu(g0).build()).field());
        assertEquals("scenario.gpus", assertThrows(InvalidValueException.class, () -> Scenario.builder("x").build()).field());
        assertEquals("tenants[a].limit", assertThrows(InvalidValueException.class,
                () -> TenantSpec.offline("a", w).withShare(50, 40)).field());
        assertEquals("tenants[a].until", assertThrows(InvalidValueException.class,
                () -> TenantSpec.offline("a", w).withActive(Duration.ofSeconds(5), Duration.ofSeconds(5))).field());
        assertEquals("dist.max", assertThrows(InvalidValueException.class,
                () -> Dist.uniform(Duration.ofMillis(5), Duration.ofMillis(4))).field());
        assertEquals("dist.mean", assertThrows(InvalidValueException.class, () -> Dist.exponential(Duration.ZERO)).field());
        assertEquals("workload.rate", assertThrows(InvalidValueException.class,
                () -> new Workload.OpenLoop(0, Dist.constant(Duration.ofMillis(1)))).field());
        assertEquals("workload.kernels", assertThrows(InvalidValueException.class,
                () -> new Workload.Training(Dist.constant(Duration.ofMillis(1)), Dist.constant(Duration.ZERO), 0)).field());
    }

    @Test
    void distributionsHaveTheirMeans() {
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(1);
        for (Dist d : List.of(Dist.constant(Duration.ofMillis(3)), Dist.uniform(Duration.ofMillis(1), Duration.ofMillis(9)),
                Dist.exponential(Duration.ofMillis(4)), Dist.logNormal(Duration.ofMillis(2), 0.5))) {
            double sum = 0;
            int n = 200_000;
            for (int i = 0; i < n; i++) {
                long v = d.sample(rnd);
                assertTrue(v >= 0);
                sum += v;
            }
            assertEquals(d.meanNanos(), sum / n, d.meanNanos() * 0.01, d.describe());
        }
        assertEquals("exp(mean 4ms)", Dist.exponential(Duration.ofMillis(4)).describe());
        assertEquals("1.5s", Dist.fmt(1_500_000_000L));
        assertEquals("250us", Dist.fmt(250_000L));
    }
}
