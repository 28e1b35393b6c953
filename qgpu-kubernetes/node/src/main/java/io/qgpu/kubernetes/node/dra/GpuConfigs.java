package io.qgpu.kubernetes.node.dra;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceAllocationConfiguration;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceClaimConfiguration;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceClassConfiguration;
import io.fabric8.kubernetes.api.model.resource.v1.OpaqueDeviceConfiguration;
import io.qgpu.api.PriorityClass;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The per-claim configuration of driver {@value DraNames#DRIVER}: opaque parameters
 * <pre>{@code
 * {apiVersion: gpu.qgpu.io/v1alpha1, kind: GpuConfig, priority: online|offline, computeLimit: N}
 * }</pre>
 * where {@code priority} is the placement's priority class and {@code computeLimit} its compute limit in percent
 * (both optional). The node's DRA driver reads them from an allocation ({@link #of}:
 * {@code status.allocation.devices.config}, where the DeviceClass's configuration arrives with source
 * {@code FromClass} and the claim's own with {@code FromClaim}); the DRA allocator reads the same before it
 * allocates, from the DeviceClasses' {@code spec.config} and the claim's {@code spec.devices.config}
 * ({@link #beforeAllocation}). An entry applies to the results of the requests it names ({@code requests}; a main
 * request also covers its subrequests {@code main/sub}), or to every result when it names none. For one result,
 * the entries that apply are taken in order, those from the class first and the claim's after them, and each
 * sets the fields it has: the claim's wins, field by field. Entries of other drivers, and entries without
 * {@code opaque}, are ignored.
 *
 * <p>Every entry of this driver is checked, whichever result it applies to: an object with exactly the fields
 * above, {@code apiVersion} and {@code kind} as shown, {@code priority} {@code online} or {@code offline},
 * {@code computeLimit} a whole number from 1 to 100. Anything else is refused with an
 * {@link IllegalArgumentException} naming the field as written and its value
 * ({@code status.allocation.devices.config[1].opaque.parameters.computeLimit = "50": must be a whole number from
 * 1 to 100}; before allocation {@code spec.devices.config[1].opaque.parameters.computeLimit = ...}, or
 * {@code DeviceClass gpu.qgpu.io spec.config[0].opaque.parameters.priority = ...}). Whether a limit suits the
 * claim (at least its cores) is the caller's to check ({@link Setting#at()} says where it was set).
 *
 * <p>Kept free of NVML, JNA and gRPC: the DRA allocator loads it without them.
 *
 * <p>Thread safety: immutable.
 */
public final class GpuConfigs {
    /** {@code apiVersion} of the parameters. */
    public static final String API_VERSION = DraNames.DRIVER + "/v1alpha1";
    /** {@code kind} of the parameters. */
    public static final String KIND = "GpuConfig";
    /** Where an allocation's configuration is, for messages. */
    public static final String AT_ALLOCATION = "status.allocation.devices.config";
    /** Where a claim's own configuration is, for messages. */
    public static final String AT_CLAIM = "spec.devices.config";
    /** The largest compute limit: a whole GPU, in percent. */
    private static final int MAX_LIMIT = 100;
    private static final Set<String> FIELDS = Set.of("apiVersion", "kind", "priority", "computeLimit");
    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * A field's value and where it was set.
     *
     * @param value the value
     * @param at    its JSON path ({@code status.allocation.devices.config[0].opaque.parameters.priority})
     */
    public record Setting<T>(T value, String at) {
    }

    /**
     * What applies to one result: each field from the last entry that set it (empty: not set).
     *
     * @param priority     the placement's priority class
     * @param computeLimit the compute limit in percent
     */
    public record Effective(Optional<Setting<PriorityClass>> priority, Optional<Setting<Integer>> computeLimit) {
        /** Nothing configured. */
        public static final Effective NONE = new Effective(Optional.empty(), Optional.empty());

        /** Whether both say the same (wherever it was set). */
        public boolean sameValues(Effective o) {
            return priority.map(Setting::value).equals(o.priority.map(Setting::value))
                    && computeLimit.map(Setting::value).equals(o.computeLimit.map(Setting::value));
        }

        /** {@code priority online, computeLimit 80}, for messages. */
        public String describe() {
            return "priority " + priority.map(s -> s.value().wireName()).orElse("(none)") + ", computeLimit "
                    + computeLimit.map(s -> s.value().toString()).orElse("(none)");
        }
    }

    /**
     * One DeviceClass's configuration as it applies to a claim before allocation.
     *
     * @param deviceClass the DeviceClass's name, for messages
     * @param requests    the claim's requests (or subrequests, {@code main/sub}) that ask for devices of this class;
     *                    its configuration applies to them alone (none: to nothing, though it is still checked)
     * @param config      the class's {@code spec.config}, null or empty for none
     */
    public record ClassConfig(String deviceClass, List<String> requests, List<DeviceClassConfiguration> config) {
        public ClassConfig {
            requests = List.copyOf(requests);
            config = config == null ? List.of() : Collections.unmodifiableList(new ArrayList<>(config));
        }
    }

    /** One entry of this driver, checked; {@code appliesToNone}: a class entry that no request uses. */
    private record Entry(boolean fromClaim, List<String> requests, boolean appliesToNone,
                         Optional<Setting<PriorityClass>> priority, Optional<Setting<Integer>> computeLimit) {
        boolean appliesTo(String request) {
            if (appliesToNone) {
                return false;
            }
            if (requests.isEmpty()) {
                return true;
            }
            for (String r : requests) {
                if (r.equals(request) || request.startsWith(r + "/")) {
                    return true;
                }
            }
            return false;
        }
    }

    private final List<Entry> entries;

    private GpuConfigs(List<Entry> entries) {
        this.entries = List.copyOf(entries);
    }

    /**
     * Reads and checks this driver's entries of an allocation's configuration.
     *
     * @param config {@code status.allocation.devices.config}, null or empty for none
     * @throws IllegalArgumentException naming the field and its value, for an entry that is not a valid GpuConfig
     */
    public static GpuConfigs of(List<DeviceAllocationConfiguration> config) {
        List<Entry> out = new ArrayList<>();
        for (int i = 0; i < (config == null ? 0 : config.size()); i++) {
            DeviceAllocationConfiguration c = config.get(i);
            if (c == null || !ours(c.getOpaque())) {
                continue;
            }
            String at = AT_ALLOCATION + "[" + i + "]";
            boolean fromClaim;
            if ("FromClaim".equals(c.getSource())) {
                fromClaim = true;
            } else if ("FromClass".equals(c.getSource())) {
                fromClaim = false;
            } else {
                throw new IllegalArgumentException(at + ".source = " + c.getSource() + ": must be FromClass or FromClaim");
            }
            out.add(entry(at + ".opaque.parameters", fromClaim, requests(c.getRequests()), false, c.getOpaque().getParameters()));
        }
        return new GpuConfigs(out);
    }

    /**
     * Reads and checks this driver's entries of a claim not yet allocated: its DeviceClasses' configuration
     * (each applying to the requests that use the class) and its own {@code spec.devices.config}; the same
     * precedence and checks as {@link #of}, the messages naming the fields where they are written.
     *
     * @param classes     the configuration of the DeviceClasses the claim's requests use, in the order of the
     *                    requests (the scheduler's order for the allocation's {@code FromClass} entries)
     * @param claimConfig the claim's {@code spec.devices.config}, null or empty for none
     * @throws IllegalArgumentException naming the field and its value, for an entry that is not a valid GpuConfig
     */
    public static GpuConfigs beforeAllocation(List<ClassConfig> classes, List<DeviceClaimConfiguration> claimConfig) {
        List<Entry> out = new ArrayList<>();
        for (ClassConfig cc : classes) {
            for (int i = 0; i < cc.config().size(); i++) {
                DeviceClassConfiguration c = cc.config().get(i);
                if (c == null || !ours(c.getOpaque())) {
                    continue;
                }
                String at = "DeviceClass " + cc.deviceClass() + " spec.config[" + i + "].opaque.parameters";
                out.add(entry(at, false, cc.requests(), cc.requests().isEmpty(), c.getOpaque().getParameters()));
            }
        }
        for (int i = 0; i < (claimConfig == null ? 0 : claimConfig.size()); i++) {
            DeviceClaimConfiguration c = claimConfig.get(i);
            if (c == null || !ours(c.getOpaque())) {
                continue;
            }
            out.add(entry(AT_CLAIM + "[" + i + "].opaque.parameters", true, requests(c.getRequests()), false,
                    c.getOpaque().getParameters()));
        }
        return new GpuConfigs(out);
    }

    /** What applies to a result of this request (the result's {@code request}: {@code main} or {@code main/sub}). */
    public Effective forRequest(String request) {
        Optional<Setting<PriorityClass>> priority = Optional.empty();
        Optional<Setting<Integer>> limit = Optional.empty();
        for (boolean claimPass : new boolean[] {false, true}) {
            for (Entry e : entries) {
                if (e.fromClaim() != claimPass || !e.appliesTo(request)) {
                    continue;
                }
                if (e.priority().isPresent()) {
                    priority = e.priority();
                }
                if (e.computeLimit().isPresent()) {
                    limit = e.computeLimit();
                }
            }
        }
        return new Effective(priority, limit);
    }

    private static boolean ours(OpaqueDeviceConfiguration o) {
        return o != null && DraNames.DRIVER.equals(o.getDriver());
    }

    private static List<String> requests(List<String> r) {
        return r == null ? List.of() : r;
    }

    private static Entry entry(String at, boolean fromClaim, List<String> requests, boolean appliesToNone, Object parameters) {
        JsonNode p;
        try {
            p = parameters == null ? null : JSON.valueToTree(parameters);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(at + ": cannot be read as JSON: " + e.getMessage());
        }
        if (p == null || !p.isObject()) {
            throw new IllegalArgumentException(at + " = " + p + ": must be a " + KIND + " object {apiVersion: " + API_VERSION
                    + ", kind: " + KIND + ", priority, computeLimit}");
        }
        exact(at + ".apiVersion", p.get("apiVersion"), API_VERSION);
        exact(at + ".kind", p.get("kind"), KIND);
        for (Iterator<Map.Entry<String, JsonNode>> it = p.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> f = it.next();
            if (!FIELDS.contains(f.getKey())) {
                throw new IllegalArgumentException(at + "." + f.getKey() + " = " + f.getValue() + ": unknown field ("
                        + KIND + " has apiVersion, kind, priority, computeLimit)");
            }
        }
        Optional<Setting<PriorityClass>> priority = Optional.empty();
        JsonNode pr = p.get("priority");
        if (pr != null) {
            if (!pr.isTextual() || !(pr.textValue().equals("online") || pr.textValue().equals("offline"))) {
                throw new IllegalArgumentException(at + ".priority = " + pr + ": must be online or offline");
            }
            priority = Optional.of(new Setting<>(pr.textValue().equals("online") ? PriorityClass.ONLINE : PriorityClass.OFFLINE,
                    at + ".priority"));
        }
        Optional<Setting<Integer>> limit = Optional.empty();
        JsonNode cl = p.get("computeLimit");
        if (cl != null) {
            if (!cl.isIntegralNumber() || !cl.canConvertToInt() || cl.intValue() < 1 || cl.intValue() > MAX_LIMIT) {
                throw new IllegalArgumentException(at + ".computeLimit = " + cl + ": must be a whole number from 1 to " + MAX_LIMIT);
            }
            limit = Optional.of(new Setting<>(cl.intValue(), at + ".computeLimit"));
        }
        return new Entry(fromClaim, List.copyOf(requests), appliesToNone, priority, limit);
    }

    private static void exact(String at, JsonNode v, String want) {
        if (v == null) {
            throw new IllegalArgumentException(at + " is missing: must be " + want);
        }
        if (!v.isTextual() || !v.textValue().equals(want)) {
            throw new IllegalArgumentException(at + " = " + v + ": must be " + want);
        }
    }
}
