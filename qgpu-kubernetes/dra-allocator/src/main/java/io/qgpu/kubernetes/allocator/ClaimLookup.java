package io.qgpu.kubernetes.allocator;

import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimTemplate;
import java.util.Optional;

/**
 * Where the admission webhook finds the ResourceClaims and ResourceClaimTemplates a new pod names: from the API server
 * through informer caches ({@link InformerClaimLookup}), from a map in tests.
 *
 * <pre>{@code
 * ClaimLookup none = new ClaimLookup() {
 *     public Optional<ResourceClaim> claim(String namespace, String name) { return Optional.empty(); }
 *     public Optional<ResourceClaimTemplate> template(String namespace, String name) { return Optional.empty(); }
 * };
 * }</pre>
 *
 * <p>Thread safety: implementations must be thread-safe; the webhook server calls them from several threads at once.
 */
public interface ClaimLookup {
    /** The ResourceClaim {@code namespace/name}; empty when it does not exist (yet). */
    Optional<ResourceClaim> claim(String namespace, String name);

    /** The ResourceClaimTemplate {@code namespace/name}; empty when it does not exist (yet). */
    Optional<ResourceClaimTemplate> template(String namespace, String name);
}
