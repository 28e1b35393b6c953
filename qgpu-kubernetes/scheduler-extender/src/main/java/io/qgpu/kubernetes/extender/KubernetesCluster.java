package io.qgpu.kubernetes.extender;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.fabric8.kubernetes.api.model.Binding;
import io.fabric8.kubernetes.api.model.BindingBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import java.util.Map;
import java.util.Optional;

/**
 * {@link ClusterApi} over fabric8's {@link KubernetesClient}: the pod is read with a GET, the decision
 * is written with a JSON merge patch of the pod's annotations (carrying the pod's UID, so that a pod
 * replaced under the same name is not touched), and the pod is bound by creating a v1 {@link Binding}
 * whose target is the node (the API server then sets {@code spec.nodeName}).
 *
 * <pre>{@code
 * try (KubernetesClient client = new KubernetesClientBuilder().build()) {
 *     ClusterApi api = new KubernetesCluster(client);
 * }
 * }</pre>
 *
 * <p>Thread safety: thread-safe (fabric8's client is).
 */
public final class KubernetesCluster implements ClusterApi {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final KubernetesClient client;

    public KubernetesCluster(KubernetesClient client) {
        this.client = io.qgpu.api.Validate.notNull("client", client);
    }

    @Override
    public Optional<Pod> pod(String namespace, String name) {
        try {
            return Optional.ofNullable(client.pods().inNamespace(namespace).withName(name).get());
        } catch (KubernetesClientException e) {
            throw new ClusterApiException("GET pod " + namespace + "/" + name + " failed: " + reason(e), e);
        }
    }

    @Override
    public void bind(Pod pod, String node, Map<String, String> annotations) {
        String ns = pod.getMetadata().getNamespace();
        String name = pod.getMetadata().getName();
        String uid = pod.getMetadata().getUid();
        if (!annotations.isEmpty()) {
            ObjectNode patch = JSON.createObjectNode();
            ObjectNode meta = patch.putObject("metadata");
            if (uid != null && !uid.isEmpty()) {
                meta.put("uid", uid);
            }
            ObjectNode a = meta.putObject("annotations");
            annotations.forEach(a::put);
            try {
                client.pods().inNamespace(ns).withName(name)
                        .patch(PatchContext.of(PatchType.JSON_MERGE), JSON.writeValueAsString(patch));
            } catch (KubernetesClientException e) {
                throw new ClusterApiException("PATCH annotations of pod " + ns + "/" + name + " failed: " + reason(e), e);
            } catch (JsonProcessingException e) {
                throw new ClusterApiException("cannot write the annotation patch of pod " + ns + "/" + name, e);
            }
        }
        Binding binding = new BindingBuilder()
                .withNewMetadata().withName(name).withNamespace(ns).withUid(uid).endMetadata()
                .withNewTarget().withApiVersion("v1").withKind("Node").withName(node).endTarget()
                .build();
        try {
            client.bindings().inNamespace(ns).resource(binding).create();
        } catch (KubernetesClientException e) {
            throw new ClusterApiException("POST Binding of pod " + ns + "/" + name + " to node " + node + " failed: "
                    + reason(e), e);
        }
    }

    private static String reason(KubernetesClientException e) {
        String status = e.getCode() > 0 ? "HTTP " + e.getCode() + ": " : "";
        return status + (e.getStatus() != null && e.getStatus().getMessage() != null ? e.getStatus().getMessage() : e.getMessage());
    }
}
