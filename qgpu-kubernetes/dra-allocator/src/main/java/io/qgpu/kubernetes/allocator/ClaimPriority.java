package io.qgpu.kubernetes.allocator;

import io.fabric8.kubernetes.api.model.resource.v1.DeviceClass;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceClassConfiguration;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceRequest;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.qgpu.api.PriorityClass;
import io.qgpu.kubernetes.node.dra.GpuConfigs;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

/**
 * A claim's priority class before it is allocated, from the same GpuConfig the node's driver reads after
 * ({@link GpuConfigs#beforeAllocation}): the DeviceClasses' {@code spec.config} first, the claim's
 * {@code spec.devices.config} winning field by field. Every request of the claim must come to the same priority, as
 * the driver gives a claim one; else the claim is refused naming the request. The allocator's own
 * ({@code AllocatorApp}); public for whatever drives a {@link DraAllocator} as the allocator does (a replay).
 *
 * <p>Thread safety: stateless.
 */
public final class ClaimPriority implements DraAllocator.PriorityOf {
    @Override
    public Optional<PriorityClass> of(ResourceClaim claim, Function<String, Optional<DeviceClass>> classes) {
        if (claim.getSpec() == null || claim.getSpec().getDevices() == null || claim.getSpec().getDevices().getRequests() == null) {
            return Optional.empty();
        }
        Map<String, List<String>> requestsByClass = new LinkedHashMap<>();
        List<String> requests = new ArrayList<>();
        for (DeviceRequest r : claim.getSpec().getDevices().getRequests()) {
            requests.add(r.getName());
            if (r.getExactly() != null && r.getExactly().getDeviceClassName() != null) {
                requestsByClass.computeIfAbsent(r.getExactly().getDeviceClassName(), k -> new ArrayList<>()).add(r.getName());
            }
        }
        List<GpuConfigs.ClassConfig> cc = new ArrayList<>();
        for (Map.Entry<String, List<String>> e : requestsByClass.entrySet()) {
            List<DeviceClassConfiguration> config = classes.apply(e.getKey()).map(d -> d.getSpec() == null ? null : d.getSpec().getConfig())
                    .orElse(null);
            if (config != null && !config.isEmpty()) {
                cc.add(new GpuConfigs.ClassConfig(e.getKey(), e.getValue(), config));
            }
        }
        GpuConfigs configs = GpuConfigs.beforeAllocation(cc, claim.getSpec().getDevices().getConfig());
        Optional<PriorityClass> first = null;
        String firstRequest = null;
        for (String r : requests) {
            GpuConfigs.Effective e = configs.forRequest(r);
            Optional<PriorityClass> p = e.priority().map(GpuConfigs.Setting::value);
            if (first == null) {
                first = p;
                firstRequest = r;
            } else if (!first.equals(p)) {
                throw new IllegalArgumentException("request " + r + " has priority " + p.map(PriorityClass::wireName).orElse("(none)")
                        + " in its " + GpuConfigs.KIND + " and request " + firstRequest + " has "
                        + first.map(PriorityClass::wireName).orElse("(none)") + ": qgpu gives a claim one priority");
            }
        }
        return first == null ? Optional.empty() : first;
    }
}
