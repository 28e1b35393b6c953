package io.qgpu.cli;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.IsolationPolicy;
import io.qgpu.api.PriorityClass;
import io.qgpu.core.compute.LimitEnforcement;
import io.qgpu.core.compute.TokenSchedulerConfig;
import io.qgpu.core.preempt.PreemptionConfig;
import io.qgpu.testkit.sim.Dist;
import io.qgpu.testkit.sim.GpuSpec;
import io.qgpu.testkit.sim.Scenario;
import io.qgpu.testkit.sim.Slicing;
import io.qgpu.testkit.sim.TenantSpec;
import io.qgpu.testkit.sim.Workload;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * Reads a simulation {@link Scenario} from JSON. Strict: unknown keys, wrong types and bad values
 * are refused with an {@link InvalidValueException} naming the JSON path, for example
 * {@code gpus[0].tenants[1].workload.rate}.
 *
 * <pre>{@code
 * {
 *   "name": "online-offline-burst", "duration": "60s", "seed": 42, "bucket": "500ms",
 *   "compute": {"window": "5s", "baseQuota": "50ms", "minQuota": "10ms"},
 *   "preemption": {"bound": "1ms", "releaseDelay": "100ms"},
 *   "gpus": [{"id": "gpu0", "policy": "burst-share", "tenants": [
 *     {"id": "infer", "priority": "online",
 *      "workload": {"type": "open-loop", "rate": 10, "service": {"type": "exponential", "mean": "8ms"}}},
 *     {"id": "train", "priority": "offline", "request": 60,
 *      "workload": {"type": "training", "compute": "100ms", "dataLoad": "10ms", "kernels": 10}}]}]
 * }
 * }</pre>
 *
 * Durations are strings with a unit: {@code ns}, {@code us}, {@code ms}, {@code s}, {@code m}. A
 * distribution is a duration (constant) or an object with {@code type} constant/uniform/exponential/lognormal.
 */
final class ScenarioReader {

    private static final ObjectMapper JSON = new ObjectMapper().enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

    private ScenarioReader() {
    }

    static Scenario read(Path file) throws IOException {
        JsonNode root;
        try {
            root = JSON.readTree(Files.readString(file));
        } catch (JsonProcessingException e) {
            throw new InvalidValueException("scenario", file.toString(), "is not valid JSON: " + e.getOriginalMessage()
                    + " (line " + e.getLocation().getLineNr() + ")");
        }
        return parse(root, file.getFileName().toString().replaceFirst("\\.json$", ""));
    }

    static Scenario parse(JsonNode root, String defaultName) {
        object(root, "scenario");
        only(root, "", Set.of("name", "description", "duration", "seed", "bucket", "compute", "preemption", "gpus", "gpu"));
        Scenario.Builder b = Scenario.builder(text(root, "name", "", defaultName));
        b.description(text(root, "description", "", ""));
        b.duration(duration(root.get("duration"), "duration", Duration.ofSeconds(60)));
        b.seed(root.has("seed") ? integer(root.get("seed"), "seed") : 1);
        if (root.has("bucket")) {
            b.bucket(duration(root.get("bucket"), "bucket", null));
        }
        if (root.has("compute")) {
            b.compute(compute(root.get("compute")));
        }
        if (root.has("preemption")) {
            b.preemption(preemption(root.get("preemption")));
        }
        if (root.has("gpus") == root.has("gpu")) {
            throw new InvalidValueException("gpus", null, "give either \"gpus\": [ ... ] or one \"gpu\": { ... }");
        }
        if (root.has("gpu")) {
            b.gpu(gpu(root.get("gpu"), "gpu"));
        } else {
            JsonNode gpus = root.get("gpus");
            if (!gpus.isArray() || gpus.isEmpty()) {
                throw new InvalidValueException("gpus", gpus.toString(), "must be a non-empty array of GPUs");
            }
            for (int i = 0; i < gpus.size(); i++) {
                b.gpu(gpu(gpus.get(i), "gpus[" + i + "]"));
            }
        }
        return b.build();
    }

    private static TokenSchedulerConfig compute(JsonNode n) {
        object(n, "compute");
        only(n, "compute.", Set.of("window", "baseQuota", "minQuota", "burstWeight", "limitEnforcement"));
        TokenSchedulerConfig.Builder c = TokenSchedulerConfig.custom();
        if (n.has("window")) {
            c.window(duration(n.get("window"), "compute.window", null));
        }
        if (n.has("baseQuota")) {
            c.baseQuota(duration(n.get("baseQuota"), "compute.baseQuota", null));
        }
        if (n.has("minQuota")) {
            c.minQuota(duration(n.get("minQuota"), "compute.minQuota", null));
        }
        if (n.has("burstWeight")) {
            c.burstWeight(number(n.get("burstWeight"), "compute.burstWeight"));
        }
        if (n.has("limitEnforcement")) {
            String e = text(n, "limitEnforcement", "compute.", null);
            try {
                c.limitEnforcement(LimitEnforcement.valueOf(e.toUpperCase(Locale.ROOT)));
            } catch (IllegalArgumentException x) {
                throw new InvalidValueException("compute.limitEnforcement", e, "must be gemini or strict");
            }
        }
        return c.build();
    }

    private static PreemptionConfig preemption(JsonNode n) {
        object(n, "preemption");
        only(n, "preemption.", Set.of("bound", "releaseDelay"));
        PreemptionConfig.Builder p = PreemptionConfig.custom();
        if (n.has("bound")) {
            p.preemptionBound(duration(n.get("bound"), "preemption.bound", null));
        }
        if (n.has("releaseDelay")) {
            p.releaseDelay(duration(n.get("releaseDelay"), "preemption.releaseDelay", null));
        }
        return p.build();
    }

    private static GpuSpec gpu(JsonNode n, String path) {
        object(n, path);
        only(n, path + ".", Set.of("id", "policy", "slicing", "tenants"));
        String id = text(n, "id", path + ".", null);
        IsolationPolicy policy = n.has("policy")
                ? IsolationPolicy.fromName(path + ".policy", text(n, "policy", path + ".", null)) : IsolationPolicy.BEST_EFFORT;
        Slicing slicing = Slicing.DRIVER;
        if (n.has("slicing")) {
            String s = text(n, "slicing", path + ".", null);
            try {
                slicing = Slicing.valueOf(s.toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new InvalidValueException(path + ".slicing", s, "must be driver or launch");
            }
        }
        JsonNode ts = n.get("tenants");
        if (ts == null || !ts.isArray() || ts.isEmpty()) {
            throw new InvalidValueException(path + ".tenants", ts == null ? null : ts.toString(), "must be a non-empty array");
        }
        List<TenantSpec> tenants = new ArrayList<>();
        for (int i = 0; i < ts.size(); i++) {
            tenants.add(tenant(ts.get(i), path + ".tenants[" + i + "]"));
        }
        return new GpuSpec(id, policy, slicing, tenants);
    }

    private static TenantSpec tenant(JsonNode n, String path) {
        object(n, path);
        only(n, path + ".", Set.of("id", "priority", "request", "limit", "workload", "suspendLatency", "from", "until"));
        String id = text(n, "id", path + ".", null);
        PriorityClass priority = PriorityClass.fromName(path + ".priority", text(n, "priority", path + ".", "offline"));
        int request = n.has("request") ? (int) integer(n.get("request"), path + ".request") : 0;
        int limit = n.has("limit") ? (int) integer(n.get("limit"), path + ".limit") : 100;
        if (!n.has("workload")) {
            throw new InvalidValueException(path + ".workload", null, "is required");
        }
        Workload w = workload(n.get("workload"), path + ".workload");
        Dist suspend = n.has("suspendLatency") ? dist(n.get("suspendLatency"), path + ".suspendLatency")
                : TenantSpec.DEFAULT_SUSPEND_LATENCY;
        long from = duration(n.get("from"), path + ".from", Duration.ZERO).toNanos();
        long until = n.has("until") ? duration(n.get("until"), path + ".until", null).toNanos() : Long.MAX_VALUE;
        try {
            return new TenantSpec(id, priority, request, limit, w, suspend, from, until);
        } catch (InvalidValueException e) {
            // TenantSpec names fields tenants[<id>].request etc. (or tenant.id): rename them to the JSON path
            int bracket = e.field().indexOf(']');
            String field = bracket >= 0 ? path + e.field().substring(bracket + 1) : path + ".id";
            throw new InvalidValueException(field, e.value(), e.rule());
        }
    }

    private static Workload workload(JsonNode n, String path) {
        object(n, path);
        String type = text(n, "type", path + ".", null);
        try {
            switch (type) {
                case "closed-loop" -> {
                    only(n, path + ".", Set.of("type", "kernel", "think"));
                    return new Workload.ClosedLoop(dist(required(n, "kernel", path), path + ".kernel"),
                            n.has("think") ? dist(n.get("think"), path + ".think") : Dist.constant(Duration.ZERO));
                }
                case "open-loop" -> {
                    only(n, path + ".", Set.of("type", "rate", "service"));
                    return new Workload.OpenLoop(number(required(n, "rate", path), path + ".rate"),
                            dist(required(n, "service", path), path + ".service"));
                }
                case "training" -> {
                    only(n, path + ".", Set.of("type", "compute", "dataLoad", "kernels"));
                    return new Workload.Training(dist(required(n, "compute", path), path + ".compute"),
                            n.has("dataLoad") ? dist(n.get("dataLoad"), path + ".dataLoad") : Dist.constant(Duration.ZERO),
                            n.has("kernels") ? (int) integer(n.get("kernels"), path + ".kernels") : 1);
                }
                default -> throw new InvalidValueException(path + ".type", type, "must be closed-loop, open-loop or training");
            }
        } catch (InvalidValueException e) {
            if (e.field().startsWith("workload.")) {
                throw new InvalidValueException(path + e.field().substring("workload".length()), e.value(), e.rule());
            }
            throw e;
        }
    }

    private static Dist dist(JsonNode n, String path) {
        if (n.isTextual()) {
            return Dist.constant(duration(n, path, null));
        }
        object(n, path);
        String type = text(n, "type", path + ".", null);
        try {
            return switch (type) {
                case "constant" -> {
                    only(n, path + ".", Set.of("type", "value"));
                    yield Dist.constant(duration(required(n, "value", path), path + ".value", null));
                }
                case "uniform" -> {
                    only(n, path + ".", Set.of("type", "min", "max"));
                    yield Dist.uniform(duration(required(n, "min", path), path + ".min", null),
                            duration(required(n, "max", path), path + ".max", null));
                }
                case "exponential" -> {
                    only(n, path + ".", Set.of("type", "mean"));
                    yield Dist.exponential(duration(required(n, "mean", path), path + ".mean", null));
                }
                case "lognormal" -> {
                    only(n, path + ".", Set.of("type", "median", "sigma"));
                    yield Dist.logNormal(duration(required(n, "median", path), path + ".median", null),
                            number(required(n, "sigma", path), path + ".sigma"));
                }
                default -> throw new InvalidValueException(path + ".type", type,
                        "must be constant, uniform, exponential or lognormal (or a duration such as \"5ms\")");
            };
        } catch (InvalidValueException e) {
            if (e.field().startsWith("dist.")) {
                throw new InvalidValueException(path + e.field().substring("dist".length()), e.value(), e.rule());
            }
            throw e;
        }
    }

    static Duration parseDuration(String path, String text) {
        return io.qgpu.testkit.sim.scenario.Durations.parse(path, text);
    }

    private static Duration duration(JsonNode n, String path, Duration dflt) {
        if (n == null) {
            if (dflt == null) {
                throw new InvalidValueException(path, null, "is required");
            }
            return dflt;
        }
        if (!n.isTextual()) {
            throw new InvalidValueException(path, n.toString(), "must be a duration: "
                    + io.qgpu.testkit.sim.scenario.Durations.FORMS);
        }
        return parseDuration(path, n.asText());
    }

    private static JsonNode required(JsonNode n, String key, String path) {
        JsonNode v = n.get(key);
        if (v == null) {
            throw new InvalidValueException(path + "." + key, null, "is required");
        }
        return v;
    }

    private static String text(JsonNode n, String key, String prefix, String dflt) {
        JsonNode v = n.get(key);
        if (v == null) {
            if (dflt == null) {
                throw new InvalidValueException(prefix + key, null, "is required");
            }
            return dflt;
        }
        if (!v.isTextual()) {
            throw new InvalidValueException(prefix + key, v.toString(), "must be a string");
        }
        return v.asText();
    }

    private static long integer(JsonNode v, String path) {
        if (!v.isIntegralNumber() || !v.canConvertToLong()) {
            throw new InvalidValueException(path, v.toString(), "must be an integer");
        }
        return v.asLong();
    }

    private static double number(JsonNode v, String path) {
        if (!v.isNumber()) {
            throw new InvalidValueException(path, v.toString(), "must be a number");
        }
        return v.asDouble();
    }

    private static void object(JsonNode n, String path) {
        if (n == null || !n.isObject()) {
            throw new InvalidValueException(path.isEmpty() ? "scenario" : path, n == null ? null : n.toString(),
                    "must be a JSON object");
        }
    }

    private static void only(JsonNode n, String prefix, Set<String> allowed) {
        for (Iterator<String> it = n.fieldNames(); it.hasNext(); ) {
            String k = it.next();
            if (!allowed.contains(k)) {
                throw new InvalidValueException(prefix + k, k, "is not a known key here; known: " + String.join(", ",
                        allowed.stream().sorted().toList()));
            }
        }
    }
}
