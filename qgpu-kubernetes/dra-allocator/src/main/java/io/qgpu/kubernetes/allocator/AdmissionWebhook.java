package io.qgpu.kubernetes.allocator;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodSchedulingGate;
import io.qgpu.kubernetes.node.dra.DraNames;
import java.io.IOException;
import java.util.Base64;
import java.util.List;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The allocator's mutating admission webhook, without the HTTP ({@link WebhookServer} serves it): it reads an
 * {@code admission.k8s.io/v1} AdmissionReview as kube-apiserver sends it and writes the review's answer. The answer
 * always allows the pod (the webhook never blocks one; its configuration's failure policy is {@code Ignore}); for a
 * Pod CREATE whose claims are the allocator's ({@link ClaimScope}) it carries a {@code JSONPatch} that adds the
 * scheduling gate {@value DraNames#SCHEDULING_GATE} to {@code spec.schedulingGates}, creating the list when the pod has
 * none and adding nothing when the gate is there already. The allocator removes the gate once it has allocated the
 * pod's claims; kube-scheduler does not place a gated pod before.
 *
 * <p>A claim or template the pod names that cannot be found (a claim created after its pod, a template not yet in the
 * cache, a failed lookup) gates the pod as well: a pod gated by mistake is released by the allocator's controller once
 * its claims show it is not the allocator's, while a pod of the allocator's that slipped through ungated would be
 * allocated by kube-scheduler instead.
 *
 * <p>Not a Pod CREATE, a review that is not {@code admission.k8s.io/v1}, a request without a pod object or without a
 * namespace: allowed, no patch, and {@code response.status.message} and a log line say why. A body that is not JSON or
 * a review without {@code request.uid} cannot be answered as a review: {@link BadReviewException} (the server answers
 * HTTP 400).
 *
 * <pre>{@code
 * AdmissionWebhook webhook = new AdmissionWebhook(new ClaimScope(lookup, List.of("gpu.qgpu.io")));
 * byte[] answer = webhook.review(requestBody);
 * // {"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"...","allowed":true,
 * //  "patchType":"JSONPatch","patch":"W3sib3AiOiJhZGQiLC...","status":{"message":"gated: claim default/gpu ..."}}}
 * }</pre>
 *
 * <p>Thread safety: thread-safe when its {@link ClaimScope}'s lookup is (it keeps no state of its own).
 */
public final class AdmissionWebhook {
    private static final Logger LOG = LoggerFactory.getLogger(AdmissionWebhook.class);

    /** The AdmissionReview version read and written. */
    public static final String API_VERSION = "admission.k8s.io/v1";
    /** The AdmissionReview kind. */
    public static final String KIND = "AdmissionReview";

    // fabric8's model keeps fields it does not know in additionalProperties; the reader must not trip on them either
    private static final ObjectMapper JSON = new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

    private final ClaimScope scope;

    public AdmissionWebhook(ClaimScope scope) {
        this.scope = Objects.requireNonNull(scope, "scope");
    }

    /**
     * A review that cannot be answered as one: the body is not JSON, or it has no {@code request.uid} for the answer
     * to name. The message says which.
     */
    public static final class BadReviewException extends Exception {
        private static final long serialVersionUID = 1L;

        BadReviewException(String message) {
            super(message);
        }
    }

    /**
     * The answer to an AdmissionReview request.
     *
     * @param body the request body: the AdmissionReview's JSON
     * @return the AdmissionReview response's JSON (UTF-8)
     * @throws BadReviewException the body is not JSON, or has no {@code request.uid}
     */
    public byte[] review(byte[] body) throws BadReviewException {
        if (body.length == 0) {
            throw new BadReviewException("the body is empty: an AdmissionReview was expected");
        }
        JsonNode review;
        try {
            review = JSON.readTree(body);
        } catch (IOException e) {
            throw new BadReviewException("the body is not JSON: " + firstLine(e.getMessage()));
        }
        JsonNode uid = review == null ? null : review.path("request").get("uid");
        if (uid == null || !uid.isTextual() || uid.asText().isBlank()) {
            throw new BadReviewException("not an AdmissionReview request: no request.uid");
        }
        JsonNode request = review.get("request");
        ObjectNode response = JSON.createObjectNode().put("uid", uid.asText()).put("allowed", true);
        String message = decide(uid.asText(), review, request, response);
        response.putObject("status").put("message", message);
        ObjectNode answer = JSON.createObjectNode().put("apiVersion", API_VERSION).put("kind", KIND);
        answer.set("response", response);
        try {
            return JSON.writeValueAsBytes(answer);
        } catch (IOException e) {
            throw new IllegalStateException("the answer cannot be written", e);
        }
    }

    /** Adds the patch to the response when the pod is to be gated; returns what was decided, in words. */
    private String decide(String uid, JsonNode review, JsonNode request, ObjectNode response) {
        String apiVersion = review.path("apiVersion").asText();
        String kind = review.path("kind").asText();
        if (!API_VERSION.equals(apiVersion) || !KIND.equals(kind)) {
            return skipped(uid, "not an " + API_VERSION + " " + KIND + " (apiVersion " + quote(apiVersion) + ", kind " + quote(kind)
                    + "): allowed unchanged", true);
        }
        JsonNode k = request.path("kind");
        String operation = request.path("operation").asText();
        if (!k.path("group").asText().isEmpty() || !"v1".equals(k.path("version").asText()) || !"Pod".equals(k.path("kind").asText())
                || !"CREATE".equals(operation)) {
            String what = (k.path("group").asText().isEmpty() ? "" : k.path("group").asText() + "/") + k.path("version").asText()
                    + " " + k.path("kind").asText();
            return skipped(uid, "not a Pod CREATE (" + what.trim() + " " + operation + "): allowed unchanged", false);
        }
        JsonNode object = request.get("object");
        if (object == null || !object.isObject()) {
            return skipped(uid, "malformed review: request.object is not a Pod: allowed unchanged", true);
        }
        String namespace = request.path("namespace").asText();
        if (namespace.isEmpty()) {
            namespace = object.path("metadata").path("namespace").asText();
        }
        if (namespace.isEmpty()) {
            return skipped(uid, "malformed review: no request.namespace: allowed unchanged", true);
        }
        Pod pod;
        try {
            pod = JSON.treeToValue(object, Pod.class);
        } catch (IOException | IllegalArgumentException e) {
            return skipped(uid, "malformed review: request.object is not a Pod (" + firstLine(e.getMessage()) + "): allowed unchanged", true);
        }
        String name = namespace + "/" + podName(pod);
        ClaimScope.Result r = scope.of(namespace, pod.getSpec());
        if (r.kind() == ClaimScope.Kind.OUT_OF_SCOPE) {
            LOG.debug("pod {} not gated: {}", name, r.reason());
            return "not gated: " + r.reason();
        }
        List<PodSchedulingGate> gates = pod.getSpec().getSchedulingGates();
        if (gates != null && gates.stream().anyMatch(g -> DraNames.SCHEDULING_GATE.equals(g.getName()))) {
            LOG.debug("pod {} already carries {}: {}", name, DraNames.SCHEDULING_GATE, r.reason());
            return "already gated: " + r.reason();
        }
        ObjectNode gate = JSON.createObjectNode().put("name", DraNames.SCHEDULING_GATE);
        ArrayNode patch = JSON.createArrayNode();
        // a pod that has no gates gets the list; otherwise the gate goes after the others
        if (object.path("spec").path("schedulingGates").isArray()) {
            patch.addObject().put("op", "add").put("path", "/spec/schedulingGates/-").set("value", gate);
        } else {
            patch.addObject().put("op", "add").put("path", "/spec/schedulingGates").set("value", JSON.createArrayNode().add(gate));
        }
        try {
            response.put("patchType", "JSONPatch").put("patch", Base64.getEncoder().encodeToString(JSON.writeValueAsBytes(patch)));
        } catch (IOException e) {
            throw new IllegalStateException("the patch cannot be written", e);
        }
        LOG.info("pod {} gated with {}: {}", name, DraNames.SCHEDULING_GATE, r.reason());
        return "gated: " + r.reason();
    }

    private static String skipped(String uid, String message, boolean malformed) {
        if (malformed) {
            LOG.warn("admission review {}: {}", uid, message);
        } else {
            LOG.debug("admission review {}: {}", uid, message);
        }
        return message;
    }

    /** The pod's name, or its generateName and {@code *} (a CREATE may leave the name to the API server). */
    private static String podName(Pod pod) {
        if (pod.getMetadata() == null) {
            return "(no name)";
        }
        String n = pod.getMetadata().getName();
        if (n != null && !n.isEmpty()) {
            return n;
        }
        String g = pod.getMetadata().getGenerateName();
        return g == null || g.isEmpty() ? "(no name)" : g + "*";
    }

    private static String quote(String s) {
        return s.isEmpty() ? "missing" : s;
    }

    private static String firstLine(String s) {
        if (s == null) {
            return "";
        }
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }
}
