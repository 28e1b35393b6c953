package io.qgpu.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.testkit.sim.PreemptionCost;
import io.qgpu.testkit.sim.ReleaseComparison;
import io.qgpu.json.QgpuJsonException;
import io.qgpu.testkit.sim.Scenario;
import io.qgpu.testkit.sim.scenario.ScenarioFile;
import io.qgpu.testkit.sim.SimResult;
import io.qgpu.testkit.sim.Simulator;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code --release}, {@code --compare}, the cost keys, and the shipped scenarios against their own text. */
class SimulateReleaseTest {

    private static final Path SCENARIOS = Path.of("scenarios");
    private static final Path POISSON = SCENARIOS.resolve("online-offline-poisson.json");

    private static String[] qgpu(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = Main.run(List.of(args), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new String[] {String.valueOf(rc), out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8)};
    }

    @Test
    void releaseRunsTheAdaptiveRuleOrAFixedDelay(@TempDir Path tmp) {
        String[] a = qgpu("simulate", POISSON.toString(), "--release", "adaptive", "--duration", "10s", "--no-trace",
                "--out", tmp.resolve("a").toString());
        assertEquals("0", a[0], a[2]);
        assertTrue(a[1].contains("release adaptive(switch 200us, max 200ms)"), a[1]);
        assertTrue(a[1].contains("preemption cost: atomic kernels, switch 100us"), a[1]);
        String[] f = qgpu("simulate", POISSON.toString(), "--release", "30ms", "--duration", "10s", "--no-trace",
                "--out", tmp.resolve("f").toString());
        assertEquals("0", f[0], f[2]);
        assertTrue(f[1].contains("release 30ms"), f[1]);
        String[] bad = qgpu("simulate", POISSON.toString(), "--release", "soon");
        assertEquals("2", bad[0]);
        assertTrue(bad[2].contains("--release must be adaptive or a delay such as 100ms, got soon"), bad[2]);
    }

    @Test
    void compareDrawsAParetoChartAndWritesEveryRule(@TempDir Path tmp) throws IOException {
        String[] r = qgpu("simulate", POISSON.toString(), "--compare", "--duration", "20s", "--out", tmp.toString());
        assertEquals("0", r[0], r[2]);
        assertTrue(r[1].contains("on or above the fixed-delay frontier"), r[1]);
        byte[] png = Files.readAllBytes(tmp.resolve("pareto.png"));
        assertArrayEquals(new byte[] {(byte) 0x89, 'P', 'N', 'G'}, Arrays.copyOf(png, 4));
        List<String> csv = Files.readAllLines(tmp.resolve("compare.csv"));
        assertEquals("rule,offline_share,online_wait_p99_us,release_idle_share", csv.get(0));
        assertEquals(1 + ReleaseComparison.DEFAULT_DELAYS.size() + 1, csv.size(), "0..200 ms and adaptive");
        assertTrue(csv.get(1).startsWith("\"0ms\","), csv.get(1));
        assertTrue(csv.get(csv.size() - 1).startsWith("\"adaptive("), csv.get(csv.size() - 1));
    }

    /** The shipped Poisson scenario: adaptive gives at least 1.5x the offline GPU time of the fixed 100 ms, p99 at most 10% above. */
    @Test
    void theShippedPoissonScenarioMeetsTheTarget() throws IOException {
        Scenario s = ScenarioFile.read(POISSON);
        assertEquals(PreemptionCost.of(true, Duration.ofNanos(100_000)), s.cost());
        ReleaseComparison.Point fixed = ReleaseComparison.point(Simulator.standard(), s, s.preemption().releasePolicy());
        assertEquals("100ms", fixed.rule());
        ReleaseComparison.Point adaptive = ReleaseComparison.point(Simulator.standard(), s, ReleaseComparison.adaptiveFor(s));
        assertTrue(adaptive.offlineShare() >= 1.5 * fixed.offlineShare(), adaptive + " vs " + fixed);
        assertTrue(adaptive.onlineWaitP99Nanos() <= 1.1 * fixed.onlineWaitP99Nanos(), adaptive + " vs " + fixed);
    }

    /** Every shipped scenario, at its own duration and seed: no fixed delay 0..200 ms beats the adaptive rule. */
    @Test
    void inEveryShippedScenarioTheAdaptiveRuleIsOnOrAboveTheFixedDelayFrontier() throws IOException {
        List<Path> files = new ArrayList<>();
        try (Stream<Path> st = Files.list(SCENARIOS)) {
            st.filter(p -> p.toString().endsWith(".json")).sorted().forEach(files::add);
        }
        assertEquals(6, files.size(), files.toString());   // the five policy examples and the offline floor's
        for (Path f : files) {
            Scenario s = ScenarioFile.read(f);
            ReleaseComparison c = ReleaseComparison.run(Simulator.standard(), s, ReleaseComparison.DEFAULT_DELAYS,
                    ReleaseComparison.adaptiveFor(s));
            assertEquals(List.of(), c.dominating(c.adaptive(), ReleaseComparison.FRONTIER_TOLERANCE), f + ": " + c);
        }
    }

    /** The elastic example's description states these figures; they must stay true (within 2 points). */
    @Test
    void theElasticScenarioDoesWhatItsTextSays() throws IOException {
        Scenario s = ScenarioFile.read(SCENARIOS.resolve("online-offline-elastic.json"));
        SimResult r = Simulator.standard().run(s);
        long sec = 1_000_000_000L;
        double aAlone = r.busy("job-a").gpuNanosBetween(0, 20 * sec) / (20.0 * sec);
        double aBoth = r.busy("job-a").gpuNanosBetween(20 * sec, 45 * sec) / (25.0 * sec);
        double bBoth = r.busy("job-b").gpuNanosBetween(20 * sec, 45 * sec) / (25.0 * sec);
        double bAlone = r.busy("job-b").gpuNanosBetween(45 * sec, 60 * sec) / (15.0 * sec);
        assertTrue(s.description().contains("about 70%") && Math.abs(aAlone - 0.70) <= 0.02, "job-a alone " + aAlone);
        assertTrue(s.description().contains("job-a about 30%") && Math.abs(aBoth - 0.30) <= 0.02, "job-a " + aBoth);
        assertTrue(s.description().contains("job-b about 48%") && Math.abs(bBoth - 0.48) <= 0.02, "job-b " + bBoth);
        assertTrue(s.description().contains("about 72%") && Math.abs(bAlone - 0.72) <= 0.02, "job-b alone " + bAlone);
        assertTrue(r.tenant("job-a").maxWindowShare() <= 0.70 + 1e-9 && r.tenant("job-b").maxWindowShare() <= 0.80 + 1e-9);
        SimResult adaptive = Simulator.standard().run(s.withPreemption(s.preemption().toBuilder()
                .releasePolicy(ReleaseComparison.adaptiveFor(s)).build()));
        assertTrue(s.description().contains("reaches its 80% limit") && adaptive.tenant("job-b").maxWindowShare() >= 0.80 - 1e-9,
                "with --release adaptive " + adaptive.tenant("job-b"));
    }

    @Test
    void theCostAndReleaseKeysAreCheckedWithTheirPath(@TempDir Path tmp) throws IOException {
        String base = Files.readString(POISSON);
        Path both = tmp.resolve("both.json");
        Files.writeString(both, base.replace("\"releaseDelay\": \"100ms\"", "\"releaseDelay\": \"100ms\", \"release\": \"5ms\""));
        assertEquals("preemption.release", field(both));
        Path kernels = tmp.resolve("kernels.json");
        Files.writeString(kernels, base.replace("\"atomic\"", "\"atomik\""));
        assertEquals("preemption.kernels", field(kernels));
        Path adaptive = tmp.resolve("adaptive.json");
        Files.writeString(adaptive, base.replace("\"releaseDelay\": \"100ms\"",
                "\"release\": {\"type\": \"adaptive\", \"switchCost\": \"300us\", \"maxHold\": \"50ms\"}"));
        assertEquals("adaptive(switch 300us, max 50ms)", ScenarioFile.read(adaptive).preemption().releasePolicy().describe());
        Path badHold = tmp.resolve("hold.json");
        Files.writeString(badHold, base.replace("\"releaseDelay\": \"100ms\"",
                "\"release\": {\"type\": \"adaptive\", \"maxHold\": \"soon\"}"));
        assertEquals("preemption.release.maxHold", field(badHold));
    }

    private static String field(Path file) {
        try {
            ScenarioFile.read(file);
            throw new AssertionError("accepted " + file);
        } catch (QgpuJsonException e) {
            return e.path();
        }
    }

    @Test
    void theChartCanUseTheQuotaWindowAsBarWidth(@TempDir Path tmp) throws IOException {
        Path el = SCENARIOS.resolve("online-offline-elastic.json");
        String[] r = qgpu("simulate", el.toString(), "--chart-bucket", "window", "--duration", "20s", "--no-trace",
                "--out", tmp.toString());
        assertEquals("0", r[0], r[2]);
        assertTrue(Files.size(tmp.resolve("share-gpu0.png")) > 5_000);
        Scenario s = ScenarioFile.read(el);
        assertEquals(s.compute().windowNanos(), SimulateCommand.chartBucket("window", s));
        String[] bad = qgpu("simulate", el.toString(), "--chart-bucket", "750ms");
        assertEquals("2", bad[0]);
        assertTrue(bad[2].contains("--chart-bucket must be a positive multiple of the scenario's bucket (500ms)"), bad[2]);
    }
}
