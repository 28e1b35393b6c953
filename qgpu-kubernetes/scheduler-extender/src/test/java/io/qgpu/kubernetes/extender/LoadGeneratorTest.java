package io.qgpu.kubernetes.extender;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.InvalidValueException;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A few pods through the load generator (the full run is a manual step, see the README): every pod
 * goes through filter, prioritize and bind on loopback and is bound; the generator stops by itself at
 * its time bound. Speed is not asserted here.
 */
class LoadGeneratorTest {

    @Test
    void aSmallRunBindsEveryPodThroughAllThreeVerbs() throws Exception {
        LoadGenerator.Options o = new LoadGenerator.Options(24, 40, 10, 4, 60, 2);
        LoadGenerator.Report r = LoadGenerator.run(o);
        assertEquals(24, r.bound(), r.toString());
        assertEquals(List.of(0, 0, 0), List.of(r.unschedulable(), r.bindErrors(), r.httpFailures()), r.toString());
        assertEquals(List.of("filter", "prioritize", "bind"), List.copyOf(r.latency().keySet()));
        r.latency().values().forEach(l -> {
            assertEquals(24, l.calls());
            assertTrue(l.p50() > 0 && l.p50() <= l.p99() && l.p99() <= l.max(), l.toString());
        });
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        LoadGenerator.print(r, o, new PrintStream(out, true, StandardCharsets.UTF_8));
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("bound 24,"), out.toString(StandardCharsets.UTF_8));
    }

    @Test
    void theSchedulerPatternBindsEveryPodAfterAWarmUpThatLeavesTheMeasuredClusterEmpty() throws Exception {
        // 24 warm-up pods, then 24 measured pods, each asking filter and prioritize about 3 nodes: the
        // measured extender answered at most 24 x 6 node checks (twice as many had the warm-up gone to it)
        LoadGenerator.Options o = new LoadGenerator.Options(24, 3, 3, 4, 60, 0, LoadGenerator.Pattern.SCHEDULER, 24);   // on the listener thread
        LoadGenerator.Report r = LoadGenerator.run(o);
        long checks = r.memoHits() + r.memoMisses();
        assertTrue(checks >= 24 * 4 && checks <= 24 * 6, "node checks of the measured extender: " + checks);
        assertEquals(24, r.bound(), r.toString());
        assertEquals(List.of(0, 0, 0), List.of(r.unschedulable(), r.bindErrors(), r.httpFailures()), r.toString());
        r.latency().values().forEach(l -> assertEquals(24, l.calls(), r.toString()));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        LoadGenerator.print(r, o, new PrintStream(out, true, StandardCharsets.UTF_8));
        String printed = out.toString(StandardCharsets.UTF_8);
        assertTrue(printed.contains("pattern scheduler, 4 binds in flight") && printed.contains("24 warm-up pods"), printed);
    }

    @Test
    void aRunReportsTheCpuItUsedPerBoundPod() throws Exception {
        LoadGenerator.Options o = new LoadGenerator.Options(24, 40, 10, 4, 60, 0, LoadGenerator.Pattern.SCHEDULER, 0);
        LoadGenerator.Report r = LoadGenerator.run(o);
        assertTrue(r.cpuSeconds() > 0 && r.cpuSeconds() < 60 * Runtime.getRuntime().availableProcessors(), r.toString());
        // the server's threads did the extender's work: some CPU, and part of the JVM's
        assertTrue(r.serverCpuSeconds() > 0 && r.serverCpuSeconds() <= r.cpuSeconds(), r.toString());
        assertTrue(r.serverKernelSeconds() >= 0 && r.serverKernelSeconds() <= r.serverCpuSeconds(), r.toString());
        // the generator's threads (the cycle, the binders' reader) did the rest of the requests' work
        assertTrue(r.generatorCpuSeconds() > 0 && r.generatorCpuSeconds() + r.serverCpuSeconds() <= r.cpuSeconds(), r.toString());
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        LoadGenerator.print(r, o, new PrintStream(out, true, StandardCharsets.UTF_8));
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("us per bound pod"), out.toString(StandardCharsets.UTF_8));
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("CPU of the extender's server threads in the run"),
                out.toString(StandardCharsets.UTF_8));
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("CPU of the generator's threads in the run"),
                out.toString(StandardCharsets.UTF_8));
    }

    @Test
    void aPatternIsNamedOnTheCommandLine() {
        assertEquals(LoadGenerator.Pattern.PODS, LoadGenerator.Pattern.of("pods"));
        assertEquals(LoadGenerator.Pattern.SCHEDULER, LoadGenerator.Pattern.of("scheduler"));
        InvalidValueException e = assertThrows(InvalidValueException.class, () -> LoadGenerator.Pattern.of("burst"));
        assertTrue(e.getMessage().contains("--pattern") && e.getMessage().contains("burst"), e.getMessage());
    }

    @Test
    void itStopsByItselfAtTheTimeBound() throws Exception {
        // far more pods than one second allows: the run ends at the bound with fewer pods bound
        LoadGenerator.Report r = LoadGenerator.run(new LoadGenerator.Options(200_000, 40, 10, 2, 1, 2));
        assertTrue(r.bound() < 200_000, r.toString());
        assertTrue(r.seconds() < 30, r.toString());
    }

    @Test
    void badOptionsAreRefusedByName() {
        InvalidValueException e = assertThrows(InvalidValueException.class, () -> new LoadGenerator.Options(10, 5, 6, 1, 1, 1));
        assertTrue(e.getMessage().contains("--candidates"), e.getMessage());
    }
}
