package io.qgpu.kubernetes.allocator;

import static io.qgpu.kubernetes.allocator.Reviews.claim;
import static io.qgpu.kubernetes.allocator.Reviews.template;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimTemplate;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.qgpu.kubernetes.node.dra.DraNames;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The lookup over informers, against fabric8's API server in CRUD mode: what was there at start, and what comes later. */
@EnableKubernetesMockClient(crud = true)
class InformerClaimLookupTest {
    static KubernetesClient client;

    @Test
    void itsOwnInformersHaveListedEveryNamespaceWhenStartReturns() throws Exception {
        client.resource(claim("gpu", DraNames.DEVICE_CLASS)).create();
        client.resource(template("share", DraNames.DEVICE_CLASS)).create();
        InformerClaimLookup lookup = InformerClaimLookup.start(client, Duration.ofSeconds(30));
        try {
            assertEquals("gpu", lookup.claim("default", "gpu").orElseThrow().getMetadata().getName());
            assertEquals("share", lookup.template("default", "share").orElseThrow().getMetadata().getName());
            assertEquals(Optional.empty(), lookup.claim("other", "gpu"));
            assertEquals(Optional.empty(), lookup.template("default", "gpu"));
        } finally {
            lookup.close();
            lookup.close(); // twice: harmless
        }
    }

    @Test
    void overTheCallersInformersItSeesLaterClaimsAndStopsNothing() throws Exception {
        CountDownLatch added = new CountDownLatch(1);
        SharedIndexInformer<ResourceClaim> claims = client.resources(ResourceClaim.class).inAnyNamespace()
                .inform(new ResourceEventHandler<>() {
                    @Override
                    public void onAdd(ResourceClaim c) {
                        if (c.getMetadata().getName().equals("later")) {
                            added.countDown();
                        }
                    }

                    @Override
                    public void onUpdate(ResourceClaim before, ResourceClaim after) {
                    }

                    @Override
                    public void onDelete(ResourceClaim c, boolean finalStateUnknown) {
                    }
                });
        SharedIndexInformer<ResourceClaimTemplate> templates = client.resources(ResourceClaimTemplate.class).inAnyNamespace().inform();
        try (InformerClaimLookup lookup = new InformerClaimLookup(claims.getStore(), templates.getStore())) {
            assertFalse(lookup.claim("default", "later").isPresent());
            client.resource(claim("later", DraNames.DEVICE_CLASS)).create();
            assertTrue(added.await(30, TimeUnit.SECONDS), "the informer saw the claim");
            assertEquals("later", lookup.claim("default", "later").orElseThrow().getMetadata().getName());
        }
        assertTrue(claims.isRunning() && templates.isRunning(), "the caller's informers keep running");
        claims.stop();
        templates.stop();
    }
}
