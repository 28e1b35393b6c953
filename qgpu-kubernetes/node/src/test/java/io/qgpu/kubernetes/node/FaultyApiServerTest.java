package io.qgpu.kubernetes.node;

import static io.qgpu.kubernetes.node.FaultyApiServer.ATTEMPTS;
import static io.qgpu.kubernetes.node.FaultyApiServer.RETRY_LIMIT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Status;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSlice;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSliceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.NonDeletingOperation;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.qgpu.kubernetes.node.FaultyApiServer.Exchange;
import io.qgpu.kubernetes.node.FaultyApiServer.Match;
import io.qgpu.kubernetes.node.FaultyApiServer.Outage;
import io.qgpu.kubernetes.node.dra.DraNames;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@link FaultyApiServer}: each fault reaches fabric8's client as a real API server's would, and the client's
 * retries are what its Javadoc says.
 */
class FaultyApiServerTest {
    static final String SLICES = "/apis/resource.k8s.io/v1/resourceslices";
    static final String NS = "default";

    static FaultyApiServer api;
    static KubernetesClient client;

    @BeforeAll
    static void start() {
        api = new FaultyApiServer();
        client = api.client();
    }

    @AfterAll
    static void stop() {
        api.close();
    }

    @BeforeEach
    void clean() {
        api.clearFaults();
        client.resources(ResourceSlice.class).delete();
        client.resources(ResourceClaim.class).inAnyNamespace().delete();
        api.clearRequests();
    }

    static ResourceSlice slice(String name) {
        return new ResourceSliceBuilder().withNewMetadata().withName(name).endMetadata()
                .withNewSpec().withDriver(DraNames.DRIVER).withNodeName("node-a")
                .withNewPool().withName("node-a").withGeneration(1L).withResourceSliceCount(1L).endPool()
                .addNewDevice().withName("gpu-0").endDevice()
                .endSpec().build();
    }

    static ResourceClaim claim(String name) {
        return new ResourceClaimBuilder().withNewMetadata().withNamespace(NS).withName(name).endMetadata()
                .withNewSpec().endSpec().build();
    }

    /** What SlicePublisher does. */
    static ResourceSlice publish(ResourceSlice s) {
        return client.resources(ResourceSlice.class).resource(s).createOr(NonDeletingOperation::update);
    }

    static ResourceSlice stored(String name) {
        return client.resources(ResourceSlice.class).withName(name).get();
    }

    static ResourceClaim storedClaim(String name) {
        return client.resources(ResourceClaim.class).inNamespace(NS).withName(name).get();
    }

    static List<Integer> codes() {
        return api.requests().stream().map(Exchange::code).toList();
    }

    @Test
    void withoutFaultsASliceIsStoredAndReadBack() {
        publish(slice("node-a-gpu.qgpu.io"));
        ResourceSlice s = stored("node-a-gpu.qgpu.io");
        assertNotNull(s);
        assertEquals("gpu.qgpu.io", s.getSpec().getDriver());
        assertEquals("node-a", s.getSpec().getNodeName());
        assertEquals("node-a", s.getSpec().getPool().getName());
        assertEquals("gpu-0", s.getSpec().getDevices().get(0).getName());
        assertNotNull(s.getMetadata().getResourceVersion(), "the CRUD store sets a resourceVersion");
        assertEquals(List.of(new Exchange("POST", SLICES, 201, false), new Exchange("GET", SLICES + "/node-a-gpu.qgpu.io", 200, false)),
                api.requests());
        assertEquals(0, api.injected());
        assertEquals(2, api.passed());
    }

    @ParameterizedTest
    @CsvSource({"409, AlreadyExists", "403, Forbidden", "422, Invalid"})
    void aStatusTheClientDoesNotRetryReachesItAtOnce(int code, String reason) {
        api.failNext(1, code, Match.of("POST", "/resourceslices"));
        KubernetesClientException e = assertThrows(KubernetesClientException.class,
                () -> client.resources(ResourceSlice.class).resource(slice("s")).create());
        assertEquals(code, e.getCode());
        assertEquals(reason, e.getStatus().getReason());
        assertEquals("Failure", e.getStatus().getStatus());
        assertEquals("s", e.getStatus().getDetails().getName());
        assertEquals("resourceslices", e.getStatus().getDetails().getKind());
        assertEquals(List.of(new Exchange("POST", SLICES, code, true)), api.requests(), "one attempt, no retry");
        assertNull(stored("s"), "a faulted request does not reach the store");
        client.resources(ResourceSlice.class).resource(slice("s")).create();
        assertNotNull(stored("s"), "the fault was used up");
    }

    @ParameterizedTest
    @CsvSource({"429, TooManyRequests", "500, InternalError", "503, ServiceUnavailable"})
    void aStatusTheClientRetriesReachesItOnlyAfterTheBudget(int code, String reason) {
        // as many faults as retries: the client's last attempt gets through
        api.failNext(RETRY_LIMIT, code, Match.path("/resourceslices"));
        client.resources(ResourceSlice.class).resource(slice("within")).create();
        assertEquals(List.of(code, code, code, 201), codes());
        assertEquals(RETRY_LIMIT, api.injected());

        // one more: every attempt fails and the last answer is the exception
        api.clearRequests();
        api.failNext(ATTEMPTS, code, Match.path("/resourceslices"));
        KubernetesClientException e = assertThrows(KubernetesClientException.class,
                () -> client.resources(ResourceSlice.class).resource(slice("beyond")).create());
        assertEquals(code, e.getCode());
        assertEquals(reason, e.getStatus().getReason());
        assertEquals(ATTEMPTS, api.injected(), "1 + requestRetryBackoffLimit attempts");
        assertEquals(0, api.passed());
        assertNull(stored("beyond"));
    }

    @Test
    void aConflictOnTheUpdateReachesTheSlicePublishersCall() {
        publish(slice("node-a-gpu.qgpu.io"));
        api.clearRequests();
        api.failNext(1, 409, Match.of("PUT", "/resourceslices/"));
        KubernetesClientException e = assertThrows(KubernetesClientException.class, () -> publish(slice("node-a-gpu.qgpu.io")));
        assertEquals(409, e.getCode());
        assertEquals("Conflict", e.getStatus().getReason());
        List<Exchange> seen = api.requests();
        // createOr: the store's own 409 on the POST, then fabric8 reads the object and PUTs it, and that PUT is faulted
        assertEquals(new Exchange("POST", SLICES, 409, false), seen.get(0));
        assertEquals(new Exchange("PUT", SLICES + "/node-a-gpu.qgpu.io", 409, true), seen.get(seen.size() - 1));
        assertEquals(1, api.injected());
        publish(slice("node-a-gpu.qgpu.io"));
    }

    @Test
    void anOutageLongerThanTheRetriesMakesTheCallThrowAndUpRecovers() {
        api.down();
        KubernetesClientException e = assertThrows(KubernetesClientException.class, () -> publish(slice("node-a-gpu.qgpu.io")));
        assertEquals(503, e.getCode());
        assertEquals(ATTEMPTS, api.injected(), "the client gave up after its budget, while the server was still down");
        assertEquals(0, api.passed());
        assertTrue(api.requests().stream().allMatch(x -> x.code() == 503 && x.injected() && x.method().equals("POST")));

        api.up();
        api.clearRequests();
        publish(slice("node-a-gpu.qgpu.io"));
        assertEquals(0, api.injected());
        assertNotNull(stored("node-a-gpu.qgpu.io"));
    }

    @Test
    void resetConnectionsAreIoErrorsThatTheClientRetries() {
        api.down(Outage.RESET);
        assertEquals(Outage.RESET, api.outage());
        KubernetesClientException e = assertThrows(KubernetesClientException.class, () -> publish(slice("node-a-gpu.qgpu.io")));
        assertInstanceOf(IOException.class, e.getCause(), "a connection failure, not an answer");
        assertEquals(-1, e.getCode(), "no status");
        assertEquals(ATTEMPTS, api.injected());
        assertEquals(List.of(new Exchange("POST", SLICES, FaultyApiServer.RESET, true)), api.requests().stream().distinct().toList());

        api.up();
        assertNull(api.outage());
        publish(slice("node-a-gpu.qgpu.io"));
        assertNotNull(stored("node-a-gpu.qgpu.io"));
    }

    @Test
    void aFaultLimitedToAPathLeavesTheOtherPathsWorking() {
        api.failNext(1_000, 500, Match.path("/resourceslices"));
        assertEquals(500, assertThrows(KubernetesClientException.class, () -> publish(slice("node-a-gpu.qgpu.io"))).getCode());

        client.resource(claim("c1")).create();
        assertNotNull(storedClaim("c1"));
        List<Exchange> claims = api.requests().stream().filter(x -> x.path().contains("/resourceclaims")).toList();
        assertEquals(2, claims.size());
        assertTrue(claims.stream().noneMatch(Exchange::injected));

        // and one limited to a method: the reads of claims fail, their writes do not
        api.clearFaults();
        api.failNext(1, 403, Match.of("GET", "/namespaces/default/resourceclaims/"));
        client.resource(claim("c2")).create();
        KubernetesClientException e = assertThrows(KubernetesClientException.class, () -> storedClaim("c2"));
        assertEquals(403, e.getCode());
        assertEquals("Forbidden", e.getStatus().getReason());
        assertNotNull(storedClaim("c2"));
    }

    @Test
    void aNotFoundOnAGetReadsAsAMissingObject() {
        client.resource(claim("c")).create();
        api.failNext(1, 404, Match.of("GET", "/resourceclaims/c$"));
        assertNull(storedClaim("c"), "fabric8's get() answers null for a 404, it does not throw");
        assertNotNull(storedClaim("c"));
    }

    @Test
    void theStatusBodyAndRetryAfterAreTheApiServers() throws Exception {
        api.failNext(1, 429);
        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5)).build();
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(api.url() + "apis/resource.k8s.io/v1/resourceslices/x"))
                .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(429, r.statusCode());
        assertEquals("1", r.headers().firstValue("Retry-After").orElse(null));
        assertEquals("application/json", r.headers().firstValue("Content-Type").orElse(null));
        Status s = new KubernetesSerialization().unmarshal(r.body(), Status.class);
        assertEquals("Status", s.getKind());
        assertEquals("v1", s.getApiVersion());
        assertEquals("Failure", s.getStatus());
        assertEquals(429, s.getCode());
        assertEquals("TooManyRequests", s.getReason());
        assertEquals(1, s.getDetails().getRetryAfterSeconds());
        assertEquals("resource.k8s.io", s.getDetails().getGroup());
        assertEquals("x", s.getDetails().getName());
        assertFalse(s.getMessage().isEmpty());
    }

    @Test
    void slowAnswersAreDelayedAndATimeoutIsNotRetriedThoughTheWriteWasStored() {
        client.resource(claim("c")).create();
        api.slow(Duration.ofMillis(200), Match.path("/resourceclaims/c"));
        long t0 = System.nanoTime();
        assertNotNull(storedClaim("c"));
        assertTrue(System.nanoTime() - t0 >= 150_000_000L, "the answer came after the delay");

        KubernetesClient impatient = api.client(b -> b.withRequestTimeout(500));
        api.clearRequests();
        api.slow(Duration.ofSeconds(2), Match.path("/resourceslices"));
        KubernetesClientException e = assertThrows(KubernetesClientException.class,
                () -> impatient.resources(ResourceSlice.class).resource(slice("late")).create());
        assertFalse(e.getCause() instanceof IOException, "a timeout, not a connection failure: " + e.getCause());
        assertEquals(List.of(new Exchange("POST", SLICES, 201, false)), api.requests(), "one attempt, and the store took it");
        api.slow(Duration.ZERO);
        assertNotNull(stored("late"), "the client saw a timeout, the write was made all the same");
    }
}
