package io.qgpu.kubernetes.dra;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodResourceClaim;
import io.fabric8.kubernetes.api.model.PodResourceClaimBuilder;
import io.fabric8.kubernetes.api.model.PodResourceClaimStatus;
import io.fabric8.kubernetes.api.model.PodResourceClaimStatusBuilder;
import io.fabric8.kubernetes.api.model.PodStatusBuilder;
import io.fabric8.kubernetes.api.model.ResourceClaimBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.util.ArrayList;
import java.util.List;

/**
 * Pods as the API server holds them once their claims exist, written to the mock API server: the pod's
 * {@code spec.resourceClaims} entries (a ResourceClaim by name, or a template whose generated claim is in
 * {@code status.resourceClaimStatuses}) and containers whose {@code resources.claims} name those entries.
 *
 * <pre>{@code
 * Pod p = Pods.pod("p").claim("gpu", "share").container("main", "gpu").container("side", "gpu").create(client);
 * }</pre>
 */
final class Pods {
    private final String name;
    private final List<PodResourceClaim> claims = new ArrayList<>();
    private final List<PodResourceClaimStatus> generated = new ArrayList<>();
    private final List<Container> init = new ArrayList<>();
    private final List<Container> containers = new ArrayList<>();

    private Pods(String name) {
        this.name = name;
    }

    /** A pod named {@code name} in {@link Claims#NS}. */
    static Pods pod(String name) {
        return new Pods(name);
    }

    /** An entry of {@code spec.resourceClaims} that names a ResourceClaim. */
    Pods claim(String entry, String resourceClaimName) {
        claims.add(new PodResourceClaimBuilder().withName(entry).withResourceClaimName(resourceClaimName).build());
        return this;
    }

    /**
     * An entry of {@code spec.resourceClaims} that names a template, and the claim generated from it in
     * {@code status.resourceClaimStatuses} ({@code null}: none generated yet).
     */
    Pods template(String entry, String templateName, String generatedClaimName) {
        claims.add(new PodResourceClaimBuilder().withName(entry).withResourceClaimTemplateName(templateName).build());
        generated.add(new PodResourceClaimStatusBuilder().withName(entry).withResourceClaimName(generatedClaimName).build());
        return this;
    }

    /** A container that uses these entries of {@code spec.resourceClaims}. */
    Pods container(String container, String... entries) {
        containers.add(container(container, null, entries));
        return this;
    }

    /** An init container that uses these entries; {@code sidecar}: {@code restartPolicy: Always} (it runs beside). */
    Pods init(String container, boolean sidecar, String... entries) {
        init.add(container(container, sidecar ? "Always" : null, entries));
        return this;
    }

    private static Container container(String name, String restartPolicy, String... entries) {
        ContainerBuilder b = new ContainerBuilder().withName(name).withImage("ubuntu:24.04").withRestartPolicy(restartPolicy);
        if (entries.length > 0) {
            b.withNewResources().withClaims(List.of(entries).stream()
                    .map(e -> new ResourceClaimBuilder().withName(e).build()).toList()).endResources();
        }
        return b.build();
    }

    /** Creates the pod (and its status) and returns it as stored, with its uid. */
    Pod create(KubernetesClient client) {
        Pod pod = new PodBuilder().withNewMetadata().withNamespace(Claims.NS).withName(name).endMetadata()
                .withNewSpec().withResourceClaims(claims).withInitContainers(init).withContainers(containers).endSpec()
                .withStatus(new PodStatusBuilder().withPhase("Pending").withResourceClaimStatuses(generated).build()).build();
        Pod created = client.pods().inNamespace(Claims.NS).resource(pod).create();
        if (!generated.isEmpty() && (created.getStatus() == null || created.getStatus().getResourceClaimStatuses().isEmpty())) {
            created.setStatus(pod.getStatus());
            created = client.pods().inNamespace(Claims.NS).resource(created).updateStatus();
        }
        return created;
    }
}
