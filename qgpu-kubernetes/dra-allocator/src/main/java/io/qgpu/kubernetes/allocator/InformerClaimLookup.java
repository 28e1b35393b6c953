package io.qgpu.kubernetes.allocator;

import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimTemplate;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.fabric8.kubernetes.client.informers.cache.Cache;
import io.fabric8.kubernetes.client.informers.cache.Store;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A {@link ClaimLookup} over fabric8 informer caches: a lookup reads memory and never waits for the API server, so the
 * webhook answers well within kube-apiserver's timeout. A claim created an instant before its pod may not be in the
 * cache yet; the webhook then gates the pod anyway (see {@link AdmissionWebhook}).
 *
 * <pre>{@code
 * // the informers of the allocator's controller, shared (closing the lookup leaves them running):
 * ClaimLookup shared = new InformerClaimLookup(claimInformer.getStore(), templateInformer.getStore());
 * // or informers of its own, on every namespace, closed with it:
 * try (InformerClaimLookup own = InformerClaimLookup.start(client, Duration.ofSeconds(60))) {
 *     own.claim("default", "gpu-claim");
 * }
 * }</pre>
 *
 * <p>Thread safety: thread-safe (the informers' stores are).
 */
public final class InformerClaimLookup implements ClaimLookup, AutoCloseable {
    private final Store<ResourceClaim> claims;
    private final Store<ResourceClaimTemplate> templates;
    private final List<SharedIndexInformer<?>> owned;

    /** Over the stores of informers the caller runs and stops. */
    public InformerClaimLookup(Store<ResourceClaim> claims, Store<ResourceClaimTemplate> templates) {
        this(claims, templates, List.of());
    }

    private InformerClaimLookup(Store<ResourceClaim> claims, Store<ResourceClaimTemplate> templates,
                                List<SharedIndexInformer<?>> owned) {
        this.claims = Objects.requireNonNull(claims, "claims");
        this.templates = Objects.requireNonNull(templates, "templates");
        this.owned = owned;
    }

    /**
     * Starts an informer on the ResourceClaims and one on the ResourceClaimTemplates of every namespace and waits for
     * their first lists.
     *
     * @throws TimeoutException when the lists did not come within {@code syncTimeout} (the informers are stopped)
     * @throws ExecutionException when an informer could not start (for example: no {@code resource.k8s.io/v1} in the
     *                            cluster, or no permission to list)
     */
    public static InformerClaimLookup start(KubernetesClient client, Duration syncTimeout)
            throws TimeoutException, ExecutionException, InterruptedException {
        SharedIndexInformer<ResourceClaim> c = client.resources(ResourceClaim.class).inAnyNamespace().runnableInformer(0);
        SharedIndexInformer<ResourceClaimTemplate> t = client.resources(ResourceClaimTemplate.class).inAnyNamespace()
                .runnableInformer(0);
        InformerClaimLookup lookup = new InformerClaimLookup(c.getStore(), t.getStore(), List.of(c, t));
        try {
            long deadline = System.nanoTime() + syncTimeout.toNanos();
            for (SharedIndexInformer<?> i : lookup.owned) {
                i.start().toCompletableFuture().get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            }
        } catch (TimeoutException | ExecutionException | InterruptedException | RuntimeException e) {
            lookup.close();
            throw e;
        }
        return lookup;
    }

    @Override
    public Optional<ResourceClaim> claim(String namespace, String name) {
        return Optional.ofNullable(claims.getByKey(Cache.namespaceKeyFunc(namespace, name)));
    }

    @Override
    public Optional<ResourceClaimTemplate> template(String namespace, String name) {
        return Optional.ofNullable(templates.getByKey(Cache.namespaceKeyFunc(namespace, name)));
    }

    /** Stops the informers {@link #start} started; nothing for stores given to the constructor. Closing twice is harmless. */
    @Override
    public void close() {
        owned.forEach(SharedIndexInformer::stop);
    }
}
