package io.qgpu.kubernetes.dra;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceAllocationConfiguration;
import io.fabric8.kubernetes.api.model.resource.v1.OpaqueDeviceConfiguration;
import io.qgpu.api.PriorityClass;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The per-claim configuration of driver {@value DriverNames#DRIVER} in an allocation
 * ({@code status.allocation.devices.config}): opaque parameters
 * <pre>{@code
 * {apiVersion: gpu.qgpu.io/v1alpha1, kind: GpuConfig, priority: online|offline, computeLimit: N}
 * }</pre>
 * where {@code priority} is the placement's priority class and {@code computeLimit} its compute limit in percent
 * (both optional). The DeviceClass's configuration arrives with source {@code FromClass}, the claim's own with
 * {@code FromClaim}; an entry applies to the results of the requests it names ({@code requests}; a main request
 * also covers its subrequests {@code main/sub}), or to every result when it names none. For one result, the
 * entries that apply are taken in order, those from the class first and the claim's after them, and each sets
 * the fields it has: the claim's wins, field by field. Entries of other drivers, and entries without
 * {@code opaque}, are ignored.
 *
 * <p>Every entry of this driver is checked, whichever result it applies to: an object with exactly the fields
 * above, {@code apiVersion} and {@code kind} as shown, {@code priority} {@code online} or {@code offline},
 * {@code computeLimit} a whole number from 1 to 100. Anything else is refused with an
 * {@link IllegalArgumentException} naming the field as written and its value
 * ({@code status.allocation.devices.config[1].opaque.parameters.computeLimit = "50": must be a whole number from
 * 1 to 100}). Whether a limit suits the claim (at least its cores) is the caller's to check
 * ({@link Setting#at()} says where it was set).
 *
 * <p>Thread safety: immutable.
 */
final class GpuConfigs {
    /** {@code apiVersion} of the parameters. */
    static final String API_VERSION = DriverNames.DRIVER + "/v1alpha1";
    /** {@code kind} of the parameters. */
    static final String KIND = "GpuConfig";
    /** Where the allocation's configuration is, for messages. */
    static final String AT = "status.allocation.devices.config";
    private static final Set<String> FIELDS = Set.of("apiVersion", "kind", "priority", "computeLimit");
    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * A field's value and where it was set.
     *
     * @param value the value
     * @param at    its JSON path ({@code status.allocation.devices.config[0].opaque.parameters.priority})
     */
    record Setting<T>(T value, String at) {
    }

    /**
     * What applies to one result: each field from the last entry that set it (empty: not set).
     *
     * @param priority     the placement's priority class
     * @param computeLimit the compute limit in percent
     */
    record Effective(Optional<Setting<PriorityClass>> priority, Optional<Setting<Integer>> computeLimit) {
        /** Nothing configured. */
        static final Effective NONE = new Effective(Optional.empty(), Optional.empty());

        /** Whether both say the same (wherever it was set). */
        boolean sameValues(Effective o) {
            return priority.map(Setting::value).equals(o.priority.map(Setting::value))
                    && computeLimit.map(Setting::value).equals(o.computeLimit.map(Setting::value));
        }

        /** {@code priority online, computeLimit 80}, for messages. */
        String describe() {
            return "priority " + priority.map(s -> s.value().wireName()).orElse("(none)") + ", computeLimit "
                    + computeLimit.map(s -> s.value().toString()).orElse("(none)");
        }
    }

    /** One entry of this driver, checked. */
    private record Entry(boolean fromClaim, List<String> requests, Optional<Setting<PriorityClass>> priority,
                         Optional<Setting<Integer>> computeLimit) {
        boolean appliesTo(String request) {
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
    static GpuConfigs of(List<DeviceAllocationConfiguration> config) {
        List<Entry> out = new ArrayList<>();
        for (int i = 0; i < (config == null ? 0 : config.size()); i++) {
            DeviceAllocationConfiguration c = config.get(i);
            OpaqueDeviceConfiguration o = c == null ? null : c.getOpaque();
            if (o == null || !DriverNames.DRIVER.equals(o.getDriver())) {
                continue;
            }
            String at = AT + "[" + i + "]";
            boolean fromClaim;
            if ("FromClaim".equals(c.getSource())) {
                fromClaim = true;
            } else if ("FromClass".equals(c.getSource())) {
                fromClaim = false;
            } else {
                throw new IllegalArgumentException(at + ".source = " + c.getSource() + ": must be FromClass or FromClaim");
            }
            out.add(entry(at + ".opaque.parameters", fromClaim, c.getRequests() == null ? List.of() : c.getRequests(),
                    o.getParameters()));
        }
        return new GpuConfigs(out);
    }

    /** What applies to a result of this request (the result's {@code request}: {@code main} or {@code main/sub}). */
    Effective forRequest(String request) {
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

    private static Entry entry(String at, boolean fromClaim, List<String> requests, Object parameters) {
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
            if (!cl.isIntegralNumber() || !cl.canConvertToInt() || cl.intValue() < 1 || cl.intValue() > PublishedCapacity.ALL_CORES) {
                throw new IllegalArgumentException(at + ".computeLimit = " + cl + ": must be a whole number from 1 to 100");
            }
            limit = Optional.of(new Setting<>(cl.intValue(), at + ".computeLimit"));
        }
        return new Entry(fromClaim, List.copyOf(requests), priority, limit);
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
