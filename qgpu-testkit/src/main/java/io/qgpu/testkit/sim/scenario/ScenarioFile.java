package io.qgpu.testkit.sim.scenario;

import com.fasterxml.jackson.databind.JsonNode;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.IsolationPolicy;
import io.qgpu.api.PriorityClass;
import io.qgpu.core.compute.LimitEnforcement;
import io.qgpu.core.compute.TokenSchedulerConfig;
import io.qgpu.core.time.Durations;
import io.qgpu.json.JsonInput;
import io.qgpu.json.QgpuJsonException;
import io.qgpu.core.preempt.PreemptionConfig;
import io.qgpu.core.preempt.ReleasePolicy;
import io.qgpu.testkit.sim.PreemptionCost;
import io.qgpu.testkit.sim.Dist;
import io.qgpu.testkit.sim.GpuSpec;
import io.qgpu.testkit.sim.Scenario;
import io.qgpu.testkit.sim.Slicing;
import io.qgpu.testkit.sim.TenantSpec;
import io.qgpu.testkit.sim.Workload;
import io.qgpu.testkit.sim.scenario.ScenarioJson.ClosedLoopDto;
import io.qgpu.testkit.sim.scenario.ScenarioJson.ComputeDto;
import io.qgpu.testkit.sim.scenario.ScenarioJson.ConstantDto;
import io.qgpu.testkit.sim.scenario.ScenarioJson.DistJson;
import io.qgpu.testkit.sim.scenario.ScenarioJson.ExponentialDto;
import io.qgpu.testkit.sim.scenario.ScenarioJson.GpuDto;
import io.qgpu.testkit.sim.scenario.ScenarioJson.LogNormalDto;
import io.qgpu.testkit.sim.scenario.ScenarioJson.OpenLoopDto;
import io.qgpu.testkit.sim.scenario.ScenarioJson.AdaptiveReleaseDto;
import io.qgpu.testkit.sim.scenario.ScenarioJson.PreemptionDto;
import io.qgpu.testkit.sim.scenario.ScenarioJson.ScenarioDto;
import io.qgpu.testkit.sim.scenario.ScenarioJson.TenantDto;
import io.qgpu.testkit.sim.scenario.ScenarioJson.TrainingDto;
import io.qgpu.testkit.sim.scenario.ScenarioJson.UniformDto;
import io.qgpu.testkit.sim.scenario.ScenarioJson.WorkloadDto;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.function.Supplier;

/**
 * Reads a simulation {@link Scenario} from a JSON file, as {@code qgpu simulate} does. Strict, like
 * every qgpu reader: an unknown key, a fraction where a whole number is meant, a bare number where a
 * duration is meant, a missing required key or a value out of range is refused with a
 * {@link QgpuJsonException} naming the file, the JSON path as written
 * ({@code gpus[0].tenants[1].workload.rate}), the value and the line. The format, key by key, is
 * in docs/formats.md; its JSON Schema is schemas/scenario.schema.json.
 *
 * <pre>{@code
 * Scenario s = ScenarioFile.read(Path.of("samples/qgpu-cli/scenarios/online-offline-burst-share.json"));
 * SimResult r = Simulator.standard().run(s);
 * }</pre>
 *
 * <p>Thread safety: stateless; safe from any thread.
 */
public final class ScenarioFile {

    private ScenarioFile() {
    }

    /** Reads a scenario file; its name defaults to the file name without {@code .json}. */
    public static Scenario read(Path file) {
        return read(JsonInput.read(file, ""), file.getFileName().toString().replaceFirst("\\.json$", ""));
    }

    /**
     * Parses scenario JSON text.
     *
     * @param source      label for messages (a file name), or empty
     * @param json        the text
     * @param defaultName the scenario's name when the text gives none
     */
    public static Scenario parse(String source, String json, String defaultName) {
        return read(JsonInput.parse(source, json, ""), defaultName);
    }

    private static Scenario read(JsonInput in, String defaultName) {
        ScenarioDto d = in.bind("", ScenarioDto.class);
        Scenario.Builder b = Scenario.builder(d.name() == null ? defaultName : d.name());
        b.description(d.description() == null ? "" : d.description());
        b.duration(d.duration() == null ? Duration.ofSeconds(60) : duration(in, "duration", d.duration()));
        b.seed(d.seed() == null ? 1 : d.seed());
        if (d.bucket() != null) {
            b.bucket(duration(in, "bucket", d.bucket()));
        }
        if (d.compute() != null) {
            b.compute(compute(in, d.compute()));
        }
        if (d.preemption() != null) {
            b.preemption(preemption(in, d.preemption()));
            b.cost(cost(in, d.preemption()));
        }
        if ((d.gpus() == null) == (d.gpu() == null)) {
            throw in.error(d.gpus() == null ? "gpus" : "gpu", "give either \"gpus\": [ ... ] or one \"gpu\": { ... }");
        }
        duplicates(in, d.gpu() != null ? List.of("gpu") : java.util.stream.IntStream.range(0, d.gpus().size())
                .mapToObj(i -> "gpus[" + i + "]").toList());
        if (d.gpu() != null) {
            b.gpu(gpu(in, "gpu", d.gpu()));
        } else {
            if (d.gpus().isEmpty()) {
                throw in.error("gpus", "must be a non-empty array of GPUs");
            }
            for (int i = 0; i < d.gpus().size(); i++) {
                b.gpu(gpu(in, "gpus[" + i + "]", d.gpus().get(i)));
            }
        }
        return convert(in, "", b::build);
    }

    /** A GPU id or tenant id written twice is refused at the second, naming the first (not the model's id-keyed path). */
    private static void duplicates(JsonInput in, List<String> gpus) {
        java.util.Map<String, String> gpuIds = new java.util.HashMap<>();
        java.util.Map<String, String> tenantIds = new java.util.HashMap<>();
        for (String g : gpus) {
            com.fasterxml.jackson.databind.JsonNode id = in.at(g + ".id");
            if (id != null && id.isTextual()) {
                String first = gpuIds.putIfAbsent(id.asText(), g + ".id");
                if (first != null) {
                    throw in.error(g + ".id", "is used twice (" + first + " has it too); GPU ids must be unique");
                }
            }
            com.fasterxml.jackson.databind.JsonNode tenants = in.at(g + ".tenants");
            for (int j = 0; tenants != null && tenants.isArray() && j < tenants.size(); j++) {
                String at = g + ".tenants[" + j + "].id";
                com.fasterxml.jackson.databind.JsonNode t = in.at(at);
                if (t != null && t.isTextual()) {
                    String first = tenantIds.putIfAbsent(t.asText(), at);
                    if (first != null) {
                        throw in.error(at, "is used twice (" + first + " has it too); tenant ids must be unique in a scenario");
                    }
                }
            }
        }
    }

    private static TokenSchedulerConfig compute(JsonInput in, ComputeDto c) {
        TokenSchedulerConfig.Builder t = TokenSchedulerConfig.custom();
        if (c.window() != null) {
            set(in, "compute.window", () -> t.window(duration(in, "compute.window", c.window())));
        }
        if (c.baseQuota() != null) {
            set(in, "compute.baseQuota", () -> t.baseQuota(duration(in, "compute.baseQuota", c.baseQuota())));
        }
        if (c.minQuota() != null) {
            set(in, "compute.minQuota", () -> t.minQuota(duration(in, "compute.minQuota", c.minQuota())));
        }
        if (c.burstWeight() != null) {
            convert(in, "compute.burstWeight", () -> t.burstWeight(c.burstWeight()));
        }
        if (c.limitEnforcement() != null) {
            t.limitEnforcement(choice(in, "compute.limitEnforcement", c.limitEnforcement(), LimitEnforcement.class,
                    "must be gemini or strict"));
        }
        return convert(in, "compute", t::build);
    }

    private static PreemptionConfig preemption(JsonInput in, PreemptionDto p) {
        PreemptionConfig.Builder b = PreemptionConfig.custom();
        if (p.bound() != null) {
            set(in, "preemption.bound", () -> b.preemptionBound(duration(in, "preemption.bound", p.bound())));
        }
        if (p.releaseDelay() != null && p.release() != null) {
            throw in.error("preemption.release", "give either releaseDelay (a fixed delay) or release, not both");
        }
        if (p.releaseDelay() != null) {
            set(in, "preemption.releaseDelay", () -> b.releaseDelay(duration(in, "preemption.releaseDelay", p.releaseDelay())));
        }
        if (p.release() != null) {
            b.releasePolicy(release(in, "preemption.release"));
        }
        if (p.offlineFloor() != null) {
            b.offlineFloor(p.offlineFloor());
        }
        return convert(in, "preemption", b::build);
    }

    /** {@code "100ms"} (a fixed delay) or {@code {"type": "adaptive", "switchCost": ..., "maxHold": ...}}. */
    private static ReleasePolicy release(JsonInput in, String at) {
        JsonNode node = in.at(at);
        if (node != null && node.isTextual()) {
            return ReleasePolicy.fixed(duration(in, at, node.asText()));
        }
        AdaptiveReleaseDto a = in.bind(at, AdaptiveReleaseDto.class);
        if (!"adaptive".equals(required(in, at + ".type", a.type()))) {
            throw in.error(at + ".type", "must be adaptive (a fixed delay is a duration: \"100ms\")");
        }
        Duration switchCost = a.switchCost() == null ? Duration.ZERO : duration(in, at + ".switchCost", a.switchCost());
        Duration maxHold = a.maxHold() == null ? Duration.ofMillis(200) : duration(in, at + ".maxHold", a.maxHold());
        return convert(in, at, () -> ReleasePolicy.adaptive(switchCost, maxHold));
    }

    private static PreemptionCost cost(JsonInput in, PreemptionDto p) {
        boolean atomic = false;
        if (p.kernels() != null) {
            if (!p.kernels().equals("atomic") && !p.kernels().equals("interruptible")) {
                throw in.error("preemption.kernels", "must be atomic or interruptible");
            }
            atomic = p.kernels().equals("atomic");
        }
        Duration switchTime = p.switchTime() == null ? Duration.ZERO : duration(in, "preemption.switch", p.switchTime());
        boolean kernelsAtomic = atomic;
        return convert(in, "preemption", () -> PreemptionCost.of(kernelsAtomic, switchTime));
    }

    private static GpuSpec gpu(JsonInput in, String at, GpuDto g) {
        if (g == null) {
            throw in.error(at, "must be a GPU object, not null");
        }
        String id = required(in, at + ".id", g.id());
        IsolationPolicy policy = g.policy() == null ? IsolationPolicy.BEST_EFFORT
                : convert(in, at + ".policy", () -> IsolationPolicy.fromName(at + ".policy", g.policy()));
        Slicing slicing = g.slicing() == null ? Slicing.DRIVER
                : choice(in, at + ".slicing", g.slicing(), Slicing.class, "must be driver or launch");
        if (g.tenants() == null || g.tenants().isEmpty()) {
            throw in.error(at + ".tenants", g.tenants() == null ? "is required" : "must be a non-empty array");
        }
        List<TenantSpec> tenants = new java.util.ArrayList<>();
        for (int i = 0; i < g.tenants().size(); i++) {
            tenants.add(tenant(in, at + ".tenants[" + i + "]", g.tenants().get(i)));
        }
        return convert(in, at, () -> new GpuSpec(id, policy, slicing, tenants));
    }

    private static TenantSpec tenant(JsonInput in, String at, TenantDto t) {
        if (t == null) {
            throw in.error(at, "must be a tenant object, not null");
        }
        String id = required(in, at + ".id", t.id());
        PriorityClass priority = t.priority() == null ? PriorityClass.OFFLINE
                : convert(in, at + ".priority", () -> PriorityClass.fromName(at + ".priority", t.priority()));
        Workload w = workload(in, at + ".workload", required(in, at + ".workload", t.workload()));
        Dist suspend = t.suspendLatency() == null ? TenantSpec.DEFAULT_SUSPEND_LATENCY : dist(in, at + ".suspendLatency");
        long from = t.from() == null ? 0 : duration(in, at + ".from", t.from()).toNanos();
        long until = t.until() == null ? Long.MAX_VALUE : duration(in, at + ".until", t.until()).toNanos();
        int request = t.request() == null ? 0 : t.request();
        int limit = t.limit() == null ? 100 : t.limit();
        return convert(in, at, () -> new TenantSpec(id, priority, request, limit, w, suspend, from, until));
    }

    private static Workload workload(JsonInput in, String at, WorkloadDto w) {
        if (w instanceof ClosedLoopDto c) {
            Dist kernel = dist(in, at + ".kernel", true);
            Dist think = c.think() == null ? Dist.constant(Duration.ZERO) : dist(in, at + ".think");
            return convert(in, at, () -> new Workload.ClosedLoop(kernel, think));
        }
        if (w instanceof OpenLoopDto o) {
            double rate = required(in, at + ".rate", o.rate());
            Dist service = dist(in, at + ".service", true);
            return convert(in, at, () -> new Workload.OpenLoop(rate, service));
        }
        TrainingDto t = (TrainingDto) w;
        Dist compute = dist(in, at + ".compute", true);
        Dist load = t.dataLoad() == null ? Dist.constant(Duration.ZERO) : dist(in, at + ".dataLoad");
        int kernels = t.kernels() == null ? 1 : t.kernels();
        return convert(in, at, () -> new Workload.Training(compute, load, kernels));
    }

    private static Dist dist(JsonInput in, String at, boolean required) {
        if (required && in.at(at) == null) {
            throw in.error(at, "is required");
        }
        return dist(in, at);
    }

    /** A distribution: a duration string (a constant) or an object by {@code type}. */
    private static Dist dist(JsonInput in, String at) {
        JsonNode node = in.at(at);
        if (node != null && node.isTextual()) {
            return Dist.constant(duration(in, at, node.asText()));
        }
        DistJson d = in.bind(at, DistJson.class);
        if (d instanceof ConstantDto c) {
            Duration value = duration(in, at + ".value", required(in, at + ".value", c.value()));
            return convert(in, at, () -> Dist.constant(value));
        }
        if (d instanceof UniformDto u) {
            Duration min = duration(in, at + ".min", required(in, at + ".min", u.min()));
            Duration max = duration(in, at + ".max", required(in, at + ".max", u.max()));
            return convert(in, at, () -> Dist.uniform(min, max));
        }
        if (d instanceof ExponentialDto e) {
            Duration mean = duration(in, at + ".mean", required(in, at + ".mean", e.mean()));
            return convert(in, at, () -> Dist.exponential(mean));
        }
        LogNormalDto l = (LogNormalDto) d;
        Duration median = duration(in, at + ".median", required(in, at + ".median", l.median()));
        double sigma = required(in, at + ".sigma", l.sigma());
        return convert(in, at, () -> Dist.logNormal(median, sigma));
    }

    private static Duration duration(JsonInput in, String at, String text) {
        try {
            return Durations.parse(at, text);
        } catch (InvalidValueException e) {
            throw in.error(at, e.rule(), e);
        }
    }

    /** A builder's setter whose refusal (a zero window, ...) is named at the key the user wrote, with the file. */
    private static void set(JsonInput in, String at, Runnable setter) {
        try {
            setter.run();
        } catch (InvalidValueException e) {
            throw in.error(at, e.rule(), e);
        }
    }

    private static <E extends Enum<E>> E choice(JsonInput in, String at, String text, Class<E> type, String rule) {
        try {
            return Enum.valueOf(type, text.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw in.error(at, rule, e);
        }
    }

    private static <T> T required(JsonInput in, String at, T value) {
        if (value == null) {
            throw in.error(at, "is required");
        }
        return value;
    }

    /**
     * Runs a model constructor; its validation error names a model field (for example
     * {@code tenants[train].request}, {@code workload.rate}, {@code dist.sigma}), which becomes the
     * key under {@code at} that the user wrote.
     */
    private static <T> T convert(JsonInput in, String at, Supplier<T> f) {
        try {
            return f.get();
        } catch (InvalidValueException e) {
            String field = e.field();
            int bracket = field.indexOf(']');
            String key = bracket >= 0 ? field.substring(bracket + 1) : field.contains(".") ? field.substring(field.indexOf('.'))
                    : "";
            String path = at.isEmpty() ? (key.startsWith(".") ? key.substring(1) : key) : at + key;
            throw in.error(in.at(path) != null ? path : at, e.rule(), e);
        }
    }
}
