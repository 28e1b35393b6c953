package io.qgpu.testkit.sim.scenario;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.IsolationPolicy;
import io.qgpu.api.PriorityClass;
import io.qgpu.core.time.Durations;
import io.qgpu.json.QgpuJsonException;
import io.qgpu.testkit.sim.Dist;
import io.qgpu.testkit.sim.Scenario;
import io.qgpu.testkit.sim.TenantSpec;
import io.qgpu.testkit.sim.Workload;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The scenario reader binds typed records, strictly, and names the file, path, value and line of every error. */
class ScenarioFileTest {

    static final String GOOD = """
            {
              "name": "demo", "duration": "30s", "seed": 7, "bucket": "250ms",
              "compute": {"window": "5s", "baseQuota": "50ms", "minQuota": "10ms", "limitEnforcement": "strict"},
              "preemption": {"bound": "1ms", "releaseDelay": "100ms"},
              "gpus": [{"id": "gpu0", "policy": "burst-share", "tenants": [
                {"id": "infer", "priority": "online",
                 "workload": {"type": "open-loop", "rate": 10, "service": {"type": "exponential", "mean": "8ms"}}},
                {"id": "train", "request": 60, "suspendLatency": {"type": "lognormal", "median": "50us", "sigma": 0.5},
                 "workload": {"type": "training", "compute": "100ms", "dataLoad": {"type": "uniform", "min": "1ms", "max": "3ms"},
                              "kernels": 10}},
                {"id": "loop", "from": "5s", "until": "20s",
                 "workload": {"type": "closed-loop", "kernel": {"type": "constant", "value": "2ms"}}}]}]
            }
            """;

    @TempDir
    Path dir;

    private QgpuJsonException refused(String json) throws Exception {
        Path f = dir.resolve("s.json");
        Files.writeString(f, json);
        QgpuJsonException e = assertThrows(QgpuJsonException.class, () -> ScenarioFile.read(f));
        assertTrue(e.getMessage().startsWith(f + ": "), e.getMessage());
        assertFalse(e.getMessage().matches("(?s).*(Dto|io\\.qgpu|com\\.fasterxml|`).*"), e.getMessage());
        return e;
    }

    @Test
    void readsEveryKeyIntoTheModel() {
        Scenario s = ScenarioFile.parse("", GOOD, "x");
        assertEquals("demo", s.name());
        assertEquals(Duration.ofSeconds(30), s.duration());
        assertEquals(7, s.seed());
        assertEquals(IsolationPolicy.BURST_SHARE, s.gpus().get(0).policy());
        TenantSpec infer = s.gpus().get(0).tenants().get(0);
        assertEquals(PriorityClass.ONLINE, infer.priority());
        assertEquals(new Workload.OpenLoop(10, Dist.exponential(Duration.ofMillis(8))), infer.workload());
        TenantSpec train = s.gpus().get(0).tenants().get(1);
        assertEquals(60, train.requestPercent());
        assertEquals(PriorityClass.OFFLINE, train.priority());
        assertEquals(Dist.logNormal(Duration.ofNanos(50_000), 0.5), train.suspendLatency());
        assertEquals(new Workload.Training(Dist.constant(Duration.ofMillis(100)),
                Dist.uniform(Duration.ofMillis(1), Duration.ofMillis(3)), 10), train.workload());
        TenantSpec loop = s.gpus().get(0).tenants().get(2);
        assertEquals(5_000_000_000L, loop.activeFromNanos());
        assertEquals(20_000_000_000L, loop.activeUntilNanos());
        assertEquals("x", ScenarioFile.parse("", GOOD.replace("\"name\": \"demo\", ", ""), "x").name());
    }

    @Test
    void unknownKeysAreRefusedInEveryObjectIncludingEachWorkloadKind() throws Exception {
        QgpuJsonException think = refused(GOOD.replace("\"rate\": 10,", "\"rate\": 10, \"think\": \"1ms\","));
        assertEquals("gpus[0].tenants[0].workload.think", think.path());
        assertEquals("unknown key; the keys allowed here are rate, service", think.rule());
        assertEquals("gpus[0].tenants[1].suspendLatency.mean",
                refused(GOOD.replace("\"sigma\": 0.5", "\"sigma\": 0.5, \"mean\": \"1ms\"")).path());
        assertEquals("compute.quantum", refused(GOOD.replace("\"window\": \"5s\",", "\"window\": \"5s\", \"quantum\": \"1ms\",")).path());
        QgpuJsonException e = refused(GOOD.replace("\"type\": \"open-loop\"", "\"type\": \"poisson\""));
        assertEquals("gpus[0].tenants[0].workload.type", e.path());
        assertTrue(e.rule().contains("closed-loop") && e.rule().contains("training"), e.rule());
    }

    @Test
    void fractionsBareNumbersAndModelErrorsNameThePathAndLine() throws Exception {
        QgpuJsonException fraction = refused(GOOD.replace("\"request\": 60", "\"request\": 60.5"));
        assertEquals("gpus[0].tenants[1].request", fraction.path());
        assertTrue(fraction.getMessage().contains("= 60.5: must be a whole number"), fraction.getMessage());
        assertEquals(8, fraction.line());
        QgpuJsonException bare = refused(GOOD.replace("\"duration\": \"30s\"", "\"duration\": 30"));
        assertEquals("duration", bare.path());
        QgpuJsonException unit = refused(GOOD.replace("\"until\": \"20s\"", "\"until\": \"20\""));
        assertEquals("gpus[0].tenants[2].until", unit.path());
        assertTrue(unit.getMessage().contains("= \"20\": must be a duration: a number and a unit"), unit.getMessage());
        QgpuJsonException range = refused(GOOD.replace("\"request\": 60", "\"request\": 160"));
        assertEquals("gpus[0].tenants[1].request", range.path());
        assertTrue(range.getMessage().contains("= 160: must be between 0 and 100"), range.getMessage());
        QgpuJsonException sigma = refused(GOOD.replace("\"sigma\": 0.5", "\"sigma\": 9"));
        assertEquals("gpus[0].tenants[1].suspendLatency.sigma", sigma.path());
        QgpuJsonException missing = refused(GOOD.replace("\"rate\": 10, ", ""));
        assertEquals("gpus[0].tenants[0].workload.rate", missing.path());
        assertEquals("is required", missing.rule());
        QgpuJsonException both = refused(GOOD.replace("\"gpus\": [", "\"gpu\": {\"id\": \"g\", \"tenants\": []}, \"gpus\": ["));
        assertTrue(both.rule().contains("either"), both.rule());
    }

    @Test
    void durationsTakeOneSyntax() {
        assertEquals(Duration.ofMillis(250), Durations.parse("d", "250ms"));
        assertEquals(Duration.ofMillis(1500), Durations.parse("d", "1.5s"));
        assertEquals(Duration.ofNanos(40_000), Durations.parse("d", "40us"));
        assertEquals(Duration.ofMinutes(2), Durations.parse("d", "2m"));
        assertEquals(Duration.ofNanos(100), Durations.parse("d", "100ns"));
        InvalidValueException bare = assertThrows(InvalidValueException.class, () -> Durations.parse("--duration", "30"));
        assertEquals("--duration = \"30\": must be a duration: " + Durations.FORMS, bare.getMessage());
        assertThrows(InvalidValueException.class, () -> Durations.parse("d", "5 h"));
        assertThrows(InvalidValueException.class, () -> Durations.parse("d", "-5s"));
    }

    /** Issue 30 item 4: a duplicate id is named with the JSON path the user wrote and the first one that has it. */
    @Test
    void aDuplicateIdNamesBothPlaces() throws Exception {
        QgpuJsonException t = refused(GOOD.replace("{\"id\": \"loop\"", "{\"id\": \"infer\""));
        assertEquals("gpus[0].tenants[2].id", t.path());
        assertTrue(t.getMessage().contains("gpus[0].tenants[2].id = \"infer\": is used twice (gpus[0].tenants[0].id has it too)"),
                t.getMessage());
        String twoGpus = GOOD.replace("\"gpus\": [{\"id\": \"gpu0\", \"policy\": \"burst-share\", \"tenants\": [",
                "\"gpus\": [{\"id\": \"gpu0\", \"tenants\": [{\"id\": \"x\", \"workload\": {\"type\": \"closed-loop\","
                        + " \"kernel\": {\"type\": \"constant\", \"value\": \"2ms\"}}}]},"
                        + " {\"id\": \"gpu0\", \"policy\": \"burst-share\", \"tenants\": [");
        QgpuJsonException g = refused(twoGpus);
        assertEquals("gpus[1].id", g.path());
        assertTrue(g.getMessage().contains("gpus[1].id = \"gpu0\": is used twice (gpus[0].id has it too)"), g.getMessage());
        QgpuJsonException across = refused(twoGpus.replace("{\"id\": \"x\"", "{\"id\": \"train\"").replace("\"id\": \"gpu0\", \"policy\"",
                "\"id\": \"gpu1\", \"policy\""));
        assertEquals("gpus[1].tenants[1].id", across.path());
        assertTrue(across.getMessage().contains("(gpus[0].tenants[0].id has it too)"), across.getMessage());
    }
}
