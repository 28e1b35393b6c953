package io.qgpu.kubernetes.allocator;

import io.fabric8.kubernetes.api.model.PodResourceClaim;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceRequest;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceSubRequest;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimSpec;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimTemplate;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whether a pod is the allocator's: some entry of its {@code spec.resourceClaims} names a ResourceClaim
 * ({@code resourceClaimName}) or a ResourceClaimTemplate ({@code resourceClaimTemplateName}, its {@code spec.spec})
 * with a request for one of the allocator's device classes: {@code spec.devices.requests[].exactly.deviceClassName},
 * or the {@code deviceClassName} of any of {@code spec.devices.requests[].firstAvailable[]}. The admission webhook
 * gates such pods; the allocator's controller releases a gated pod that turns out not to be one.
 *
 * <p>A reference that cannot be looked up (the claim does not exist yet: it may be created after the pod; or the
 * lookup failed) makes the pod {@link Kind#UNRESOLVED} unless another reference is already in scope.
 *
 * <pre>{@code
 * ClaimScope scope = new ClaimScope(lookup, List.of("gpu.qgpu.io"));
 * ClaimScope.Result r = scope.of("default", pod.getSpec());
 * r.kind();     // IN_SCOPE
 * r.reason();   // "template default/qgpu-share-10gi-30 requests device class gpu.qgpu.io"
 * }</pre>
 *
 * <p>Thread safety: thread-safe when its {@link ClaimLookup} is (it keeps no state of its own).
 */
public final class ClaimScope {
    private static final Logger LOG = LoggerFactory.getLogger(ClaimScope.class);

    /** What a pod's claims say. */
    public enum Kind {
        /** A claim or template requests one of the device classes. */
        IN_SCOPE,
        /** Every reference was found and none requests one of the device classes (or the pod names no claims). */
        OUT_OF_SCOPE,
        /** None found requests one of the classes, and some reference was not found (or could not be looked up). */
        UNRESOLVED
    }

    /**
     * The verdict and why, in words naming the claim or template ({@code claim default/gpu requests device class
     * gpu.qgpu.io}).
     */
    public record Result(Kind kind, String reason) {
    }

    private final ClaimLookup lookup;
    private final Set<String> deviceClasses;

    /**
     * @param deviceClasses the allocator's device classes ({@code --device-class}), at least one
     */
    public ClaimScope(ClaimLookup lookup, Collection<String> deviceClasses) {
        this.lookup = java.util.Objects.requireNonNull(lookup, "lookup");
        this.deviceClasses = Set.copyOf(deviceClasses);
        if (this.deviceClasses.isEmpty()) {
            throw new IllegalArgumentException("deviceClasses: at least one device class is needed");
        }
    }

    /** The device classes, as given. */
    public Set<String> deviceClasses() {
        return deviceClasses;
    }

    /** The verdict on a pod of {@code namespace} with this spec. */
    public Result of(String namespace, PodSpec spec) {
        List<PodResourceClaim> refs = spec == null || spec.getResourceClaims() == null ? List.of() : spec.getResourceClaims();
        String unresolved = null;
        for (PodResourceClaim ref : refs) {
            String claim = ref.getResourceClaimName();
            String template = ref.getResourceClaimTemplateName();
            String what;
            Supplier<Optional<ResourceClaimSpec>> get;
            if (claim != null && !claim.isEmpty()) {
                what = "claim " + namespace + "/" + claim;
                get = () -> lookup.claim(namespace, claim).map(ResourceClaim::getSpec);
            } else if (template != null && !template.isEmpty()) {
                what = "template " + namespace + "/" + template;
                get = () -> lookup.template(namespace, template).map(ResourceClaimTemplate::getSpec).map(s -> s.getSpec());
            } else {
                continue; // neither: the API server refuses such a pod; nothing to look up
            }
            Optional<ResourceClaimSpec> found;
            try {
                found = get.get();
            } catch (RuntimeException e) {
                LOG.warn("{} cannot be looked up: {}", what, e.toString());
                unresolved = unresolved == null ? what + " cannot be looked up (" + e.getClass().getSimpleName() + ")" : unresolved;
                continue;
            }
            if (found.isEmpty()) {
                unresolved = unresolved == null ? what + " is not found (it may be created after the pod)" : unresolved;
                continue;
            }
            Optional<String> used = used(found.get(), deviceClasses);
            if (used.isPresent()) {
                return new Result(Kind.IN_SCOPE, what + " requests device class " + used.get());
            }
        }
        if (unresolved != null) {
            return new Result(Kind.UNRESOLVED, unresolved);
        }
        return new Result(Kind.OUT_OF_SCOPE, refs.isEmpty() ? "the pod names no resource claims"
                : "no claim of the pod requests device class " + deviceClasses.stream().sorted().collect(Collectors.joining(" or ")));
    }

    /** The first device class of {@code classes} that a request of the claim spec names (exactly or first available). */
    public static Optional<String> used(ResourceClaimSpec spec, Set<String> classes) {
        if (spec == null || spec.getDevices() == null || spec.getDevices().getRequests() == null) {
            return Optional.empty();
        }
        for (DeviceRequest r : spec.getDevices().getRequests()) {
            if (r.getExactly() != null && named(r.getExactly().getDeviceClassName(), classes)) {
                return Optional.of(r.getExactly().getDeviceClassName());
            }
            if (r.getFirstAvailable() != null) {
                for (DeviceSubRequest s : r.getFirstAvailable()) {
                    if (named(s.getDeviceClassName(), classes)) {
                        return Optional.of(s.getDeviceClassName());
                    }
                }
            }
        }
        return Optional.empty();
    }

    /** A class name (null when the request names none) among {@code classes} (which may refuse a null query). */
    private static boolean named(String className, Set<String> classes) {
        return className != null && classes.contains(className);
    }
}
