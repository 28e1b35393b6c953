package io.qgpu.kubernetes.allocator;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimTemplate;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimTemplateBuilder;
import io.fabric8.zjsonpatch.JsonPatch;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The test side of the admission webhook: AdmissionReview requests as kube-apiserver sends them, claims and templates
 * in a map ({@link Claims}), and the answer's patch applied to the pod as kube-apiserver applies it.
 */
final class Reviews {
    static final ObjectMapper JSON = new ObjectMapper();

    private Reviews() {
    }

    /** A pod of namespace {@code default} named {@code p}; {@code spec} is the JSON of its spec. */
    static String pod(String spec) {
        return "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"default\"},\"spec\":" + spec + "}";
    }

    /** The spec of a pod with one container and these {@code resourceClaims} entries (JSON), and more fields. */
    static String spec(String resourceClaims, String more) {
        return "{\"containers\":[{\"name\":\"main\",\"image\":\"busybox\",\"resources\":{\"limits\":{\"memory\":\"1Gi\"}}}]"
                + (resourceClaims == null ? "" : ",\"resourceClaims\":" + resourceClaims) + (more == null ? "" : "," + more) + "}";
    }

    /** An admission.k8s.io/v1 review of a v1 Pod {@code operation} in namespace {@code default}. */
    static byte[] review(String uid, String operation, String pod) {
        return ("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"" + uid + "\","
                + "\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
                + "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
                + "\"requestKind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
                + "\"operation\":\"" + operation + "\",\"namespace\":\"default\",\"name\":\"p\","
                + "\"userInfo\":{\"username\":\"system:serviceaccount:default:deployer\"},"
                + "\"object\":" + pod + ",\"oldObject\":null,\"dryRun\":false,"
                + "\"options\":{\"apiVersion\":\"meta.k8s.io/v1\",\"kind\":\"CreateOptions\"}}}").getBytes(StandardCharsets.UTF_8);
    }

    /** A Pod CREATE review. */
    static byte[] create(String pod) {
        return review("uid-1", "CREATE", pod);
    }

    static JsonNode read(byte[] answer) throws IOException {
        return JSON.readTree(answer);
    }

    /** The answer's {@code response.patch}, decoded; null without one. */
    static JsonNode patch(JsonNode answer) throws IOException {
        JsonNode p = answer.path("response").get("patch");
        return p == null ? null : read(Base64.getDecoder().decode(p.asText()));
    }

    /** The pod's {@code spec.schedulingGates} after the answer's patch, as kube-apiserver applies it. */
    static JsonNode gatesAfter(String pod, JsonNode answer) throws IOException {
        JsonNode patch = patch(answer);
        JsonNode p = read(pod.getBytes(StandardCharsets.UTF_8));
        return (patch == null ? p : JsonPatch.apply(patch, p)).path("spec").path("schedulingGates");
    }

    static ResourceClaim claim(String name, String exactlyClass) {
        return new ResourceClaimBuilder().withNewMetadata().withNamespace("default").withName(name).endMetadata()
                .withNewSpec().withNewDevices().addNewRequest().withName("gpu").withNewExactly().withDeviceClassName(exactlyClass)
                .endExactly().endRequest().endDevices().endSpec().build();
    }

    /** A claim whose one request takes the first available of these classes. */
    static ResourceClaim firstAvailable(String name, String... classes) {
        var request = new ResourceClaimBuilder().withNewMetadata().withNamespace("default").withName(name).endMetadata()
                .withNewSpec().withNewDevices().addNewRequest().withName("gpu");
        for (int i = 0; i < classes.length; i++) {
            request = request.addNewFirstAvailable().withName("option-" + i).withDeviceClassName(classes[i]).endFirstAvailable();
        }
        return request.endRequest().endDevices().endSpec().build();
    }

    static ResourceClaimTemplate template(String name, String exactlyClass) {
        return new ResourceClaimTemplateBuilder().withNewMetadata().withNamespace("default").withName(name).endMetadata()
                .withNewSpec().withNewSpec().withNewDevices().addNewRequest().withName("gpu").withNewExactly()
                .withDeviceClassName(exactlyClass).endExactly().endRequest().endDevices().endSpec().endSpec().build();
    }

    /** A {@link ClaimLookup} over maps; {@link #failing} makes every lookup throw. */
    static final class Claims implements ClaimLookup {
        final Map<String, ResourceClaim> claims = new ConcurrentHashMap<>();
        final Map<String, ResourceClaimTemplate> templates = new ConcurrentHashMap<>();
        volatile boolean failing;

        Claims add(ResourceClaim c) {
            claims.put(c.getMetadata().getNamespace() + "/" + c.getMetadata().getName(), c);
            return this;
        }

        Claims add(ResourceClaimTemplate t) {
            templates.put(t.getMetadata().getNamespace() + "/" + t.getMetadata().getName(), t);
            return this;
        }

        @Override
        public Optional<ResourceClaim> claim(String namespace, String name) {
            if (failing) {
                throw new IllegalStateException("the API server is away");
            }
            return Optional.ofNullable(claims.get(namespace + "/" + name));
        }

        @Override
        public Optional<ResourceClaimTemplate> template(String namespace, String name) {
            if (failing) {
                throw new IllegalStateException("the API server is away");
            }
            return Optional.ofNullable(templates.get(namespace + "/" + name));
        }
    }
}
