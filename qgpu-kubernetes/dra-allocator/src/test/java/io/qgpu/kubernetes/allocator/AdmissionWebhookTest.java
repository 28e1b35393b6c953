package io.qgpu.kubernetes.allocator;

import static io.qgpu.kubernetes.allocator.Reviews.claim;
import static io.qgpu.kubernetes.allocator.Reviews.create;
import static io.qgpu.kubernetes.allocator.Reviews.firstAvailable;
import static io.qgpu.kubernetes.allocator.Reviews.gatesAfter;
import static io.qgpu.kubernetes.allocator.Reviews.patch;
import static io.qgpu.kubernetes.allocator.Reviews.pod;
import static io.qgpu.kubernetes.allocator.Reviews.read;
import static io.qgpu.kubernetes.allocator.Reviews.review;
import static io.qgpu.kubernetes.allocator.Reviews.spec;
import static io.qgpu.kubernetes.allocator.Reviews.template;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.qgpu.kubernetes.node.dra.DraNames;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The webhook's answers to AdmissionReviews as kube-apiserver sends them, each patch applied to the pod as
 * kube-apiserver applies it: the gate added for a pod whose claim, template or first-available request uses the
 * allocator's class (or whose claim is not there yet), and nothing otherwise; never twice, other gates kept; anything
 * but a Pod CREATE allowed unchanged with a message; no uid or no JSON refused.
 */
class AdmissionWebhookTest {
    static final String GATES_NONE = null;
    static final String ONLY_GATE = "[{\"name\":\"" + DraNames.SCHEDULING_GATE + "\"}]";

    final Reviews.Claims claims = new Reviews.Claims()
            .add(claim("gpu", DraNames.DEVICE_CLASS))
            .add(claim("nic", "nic.example.com"))
            .add(firstAvailable("either", "big-gpu.example.com", DraNames.DEVICE_CLASS))
            .add(firstAvailable("neither", "big-gpu.example.com", "small-gpu.example.com"))
            .add(template("share", DraNames.DEVICE_CLASS))
            .add(template("nic-template", "nic.example.com"));
    final AdmissionWebhook webhook = new AdmissionWebhook(new ClaimScope(claims, List.of(DraNames.DEVICE_CLASS)));

    static String byClaim(String name) {
        return "[{\"name\":\"c\",\"resourceClaimName\":\"" + name + "\"}]";
    }

    static String byTemplate(String name) {
        return "[{\"name\":\"c\",\"resourceClaimTemplateName\":\"" + name + "\"}]";
    }

    JsonNode answer(String pod) throws Exception {
        JsonNode a = read(webhook.review(create(pod)));
        assertEquals("admission.k8s.io/v1", a.path("apiVersion").asText());
        assertEquals("AdmissionReview", a.path("kind").asText());
        assertEquals("uid-1", a.path("response").path("uid").asText());
        assertTrue(a.path("response").path("allowed").asBoolean(), "the webhook never blocks a pod: " + a);
        return a;
    }

    /** Asserts the pod is gated and returns the answer's message. */
    String gated(String pod) throws Exception {
        JsonNode a = answer(pod);
        assertEquals("JSONPatch", a.path("response").path("patchType").asText(), a.toString());
        JsonNode gates = gatesAfter(pod, a);
        assertEquals(1, countGate(gates), gates.toString());
        return a.path("response").path("status").path("message").asText();
    }

    /** Asserts the pod is left as it is and returns the answer's message. */
    String unchanged(String pod) throws Exception {
        JsonNode a = answer(pod);
        assertNull(patch(a), a.toString());
        assertNull(a.path("response").get("patchType"), a.toString());
        return a.path("response").path("status").path("message").asText();
    }

    static long countGate(JsonNode gates) {
        long n = 0;
        for (JsonNode g : gates) {
            n += DraNames.SCHEDULING_GATE.equals(g.path("name").asText()) ? 1 : 0;
        }
        return n;
    }

    @Test
    void aClaimOfTheClassGatesThePodCreatingTheList() throws Exception {
        String pod = pod(spec(byClaim("gpu"), GATES_NONE));
        JsonNode a = answer(pod);
        assertEquals(read(("[{\"op\":\"add\",\"path\":\"/spec/schedulingGates\",\"value\":" + ONLY_GATE + "}]")
                .getBytes(StandardCharsets.UTF_8)), patch(a));
        assertEquals(read(ONLY_GATE.getBytes(StandardCharsets.UTF_8)), gatesAfter(pod, a));
        assertEquals("gated: claim default/gpu requests device class gpu.qgpu.io", a.path("response").path("status").path("message").asText());
    }

    @Test
    void aTemplateOfTheClassGatesThePod() throws Exception {
        assertEquals("gated: template default/share requests device class gpu.qgpu.io", gated(pod(spec(byTemplate("share"), GATES_NONE))));
    }

    @Test
    void aFirstAvailableRequestNamingTheClassGatesThePod() throws Exception {
        assertEquals("gated: claim default/either requests device class gpu.qgpu.io", gated(pod(spec(byClaim("either"), GATES_NONE))));
    }

    @Test
    void oneClaimOfTheClassAmongOthersGatesThePod() throws Exception {
        String refs = "[{\"name\":\"a\",\"resourceClaimName\":\"nic\"},{\"name\":\"b\",\"resourceClaimTemplateName\":\"share\"}]";
        assertEquals("gated: template default/share requests device class gpu.qgpu.io", gated(pod(spec(refs, GATES_NONE))));
    }

    @Test
    void otherClassesAndNoClaimsLeaveThePodAlone() throws Exception {
        assertEquals("not gated: no claim of the pod requests device class gpu.qgpu.io", unchanged(pod(spec(byClaim("nic"), GATES_NONE))));
        assertEquals("not gated: no claim of the pod requests device class gpu.qgpu.io",
                unchanged(pod(spec(byTemplate("nic-template"), GATES_NONE))));
        assertEquals("not gated: no claim of the pod requests device class gpu.qgpu.io", unchanged(pod(spec(byClaim("neither"), GATES_NONE))));
        assertEquals("not gated: the pod names no resource claims", unchanged(pod(spec(null, GATES_NONE))));
        assertEquals("not gated: the pod names no resource claims", unchanged(pod(spec("[]", "\"schedulingGates\":[]"))));
    }

    @Test
    void theGateIsNeverAddedTwice() throws Exception {
        assertEquals("already gated: claim default/gpu requests device class gpu.qgpu.io",
                unchanged(pod(spec(byClaim("gpu"), "\"schedulingGates\":[{\"name\":\"example.com/quota\"}," + ONLY_GATE.substring(1)))));
    }

    @Test
    void otherGatesAreKept() throws Exception {
        String pod = pod(spec(byClaim("gpu"), "\"schedulingGates\":[{\"name\":\"example.com/quota\"}]"));
        JsonNode a = answer(pod);
        assertEquals(read(("[{\"op\":\"add\",\"path\":\"/spec/schedulingGates/-\",\"value\":{\"name\":\"qgpu.io/allocate\"}}]")
                .getBytes(StandardCharsets.UTF_8)), patch(a));
        assertEquals(read("[{\"name\":\"example.com/quota\"},{\"name\":\"qgpu.io/allocate\"}]".getBytes(StandardCharsets.UTF_8)),
                gatesAfter(pod, a));
        // an empty list: the gate is added to it
        String empty = pod(spec(byClaim("gpu"), "\"schedulingGates\":[]"));
        assertEquals(read(ONLY_GATE.getBytes(StandardCharsets.UTF_8)), gatesAfter(empty, answer(empty)));
    }

    @Test
    void aClaimNotFoundGatesThePodAnyway() throws Exception {
        assertEquals("gated: claim default/later is not found (it may be created after the pod)", gated(pod(spec(byClaim("later"), GATES_NONE))));
        assertEquals("gated: template default/nowhere is not found (it may be created after the pod)",
                gated(pod(spec(byTemplate("nowhere"), GATES_NONE))));
        // one of another class and one not found: the one not found may be the allocator's
        String refs = "[{\"name\":\"a\",\"resourceClaimName\":\"nic\"},{\"name\":\"b\",\"resourceClaimName\":\"later\"}]";
        assertEquals("gated: claim default/later is not found (it may be created after the pod)", gated(pod(spec(refs, GATES_NONE))));
    }

    @Test
    void aLookupThatFailsGatesThePod() throws Exception {
        claims.failing = true;
        assertEquals("gated: claim default/gpu cannot be looked up (IllegalStateException)", gated(pod(spec(byClaim("gpu"), GATES_NONE))));
    }

    @Test
    void theAllocatorsOwnDeviceClasses() throws Exception {
        AdmissionWebhook custom = new AdmissionWebhook(new ClaimScope(claims, List.of("nic.example.com", "small-gpu.example.com")));
        String pod = pod(spec(byClaim("neither"), GATES_NONE));
        JsonNode a = read(custom.review(create(pod)));
        assertEquals(1, countGate(gatesAfter(pod, a)));
        assertEquals("gated: claim default/neither requests device class small-gpu.example.com",
                a.path("response").path("status").path("message").asText());
        assertNull(patch(read(custom.review(create(pod(spec(byClaim("gpu"), GATES_NONE)))))));
    }

    @Test
    void anythingButAPodCreateIsAllowedUnchanged() throws Exception {
        String pod = pod(spec(byClaim("gpu"), GATES_NONE));
        for (String op : List.of("UPDATE", "DELETE", "CONNECT")) {
            JsonNode a = read(webhook.review(review("uid-2", op, pod)));
            assertEquals("uid-2", a.path("response").path("uid").asText());
            assertTrue(a.path("response").path("allowed").asBoolean());
            assertNull(patch(a));
            assertEquals("not a Pod CREATE (v1 Pod " + op + "): allowed unchanged", a.path("response").path("status").path("message").asText());
        }
        String deployment = new String(create(pod), StandardCharsets.UTF_8)
                .replace("\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"}", "\"kind\":{\"group\":\"apps\",\"version\":\"v1\",\"kind\":\"Deployment\"}");
        JsonNode a = read(webhook.review(deployment.getBytes(StandardCharsets.UTF_8)));
        assertNull(patch(a));
        assertEquals("not a Pod CREATE (apps/v1 Deployment CREATE): allowed unchanged", a.path("response").path("status").path("message").asText());
    }

    @Test
    void aMalformedReviewIsAllowedUnchangedWithAMessage() throws Exception {
        String pod = pod(spec(byClaim("gpu"), GATES_NONE));
        String review = new String(create(pod), StandardCharsets.UTF_8);
        assertEquals("malformed review: request.object is not a Pod: allowed unchanged",
                message(review.replace("\"object\":" + pod, "\"object\":\"a pod\"")));
        assertEquals("malformed review: request.object is not a Pod: allowed unchanged",
                message(review.replace("\"object\":" + pod + ",", "")));
        assertTrue(message(review.replace(byClaim("gpu"), "\"gpu\"")).startsWith("malformed review: request.object is not a Pod (Cannot"),
                message(review.replace(byClaim("gpu"), "\"gpu\"")));
        assertEquals("malformed review: no request.namespace: allowed unchanged",
                message(review.replace("\"namespace\":\"default\",", "").replace(",\"namespace\":\"default\"", "")));
        assertEquals("not an admission.k8s.io/v1 AdmissionReview (apiVersion admission.k8s.io/v1beta1, kind AdmissionReview): allowed unchanged",
                message(review.replace("admission.k8s.io/v1", "admission.k8s.io/v1beta1")));
        assertEquals("not an admission.k8s.io/v1 AdmissionReview (apiVersion missing, kind missing): allowed unchanged",
                message("{\"request\":{\"uid\":\"u\"}}"));
    }

    @Test
    void theNamespaceMayComeFromThePod() throws Exception {
        String pod = pod(spec(byClaim("gpu"), GATES_NONE));
        String review = new String(create(pod), StandardCharsets.UTF_8).replace("\"namespace\":\"default\",\"name\":\"p\",", "");
        assertEquals("gated: claim default/gpu requests device class gpu.qgpu.io", message(review));
    }

    String message(String review) throws Exception {
        JsonNode a = read(webhook.review(review.getBytes(StandardCharsets.UTF_8)));
        assertTrue(a.path("response").path("allowed").asBoolean(), a.toString());
        return a.path("response").path("status").path("message").asText();
    }

    @Test
    void noUidOrNoJsonCannotBeAnswered() {
        assertEquals("not an AdmissionReview request: no request.uid", refusal("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}"));
        assertEquals("not an AdmissionReview request: no request.uid", refusal("{\"request\":{\"uid\":\"\"}}"));
        assertEquals("not an AdmissionReview request: no request.uid", refusal("{\"request\":{\"uid\":7}}"));
        assertEquals("not an AdmissionReview request: no request.uid", refusal("[1,2]"));
        assertEquals("the body is empty: an AdmissionReview was expected", refusal(""));
        assertTrue(refusal("{\"request\":").startsWith("the body is not JSON: "), refusal("{\"request\":"));
    }

    String refusal(String body) {
        return assertThrows(AdmissionWebhook.BadReviewException.class, () -> webhook.review(body.getBytes(StandardCharsets.UTF_8)))
                .getMessage();
    }
}
