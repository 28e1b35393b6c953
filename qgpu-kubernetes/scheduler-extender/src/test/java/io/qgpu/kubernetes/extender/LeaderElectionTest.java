package io.qgpu.kubernetes.extender;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Placement;
import io.qgpu.json.QgpuJson;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Two replicas in one JVM, started through {@link Main} with {@code --leader-elect}, against fabric8's
 * mock API server (CRUD mode; the Lease is a real {@code coordination.k8s.io/v1} object there).
 * Short timings: lease 3 s, renew deadline 2 s, retry period 250 ms. Every wait is a bounded poll.
 *
 * <p>Shown to catch seeded bugs, each applied alone to a copy of the main code and run once (1 of 1
 * runs failed for each): a take-over step that does not rebuild the ledger (both take-over tests
 * fail: the new leader's ledger lacks {@code team-a/infer-0}); a {@link LeaderOnlyExtender} that does
 * not check leadership (the follower's bind answers 200, not 503); readiness that ignores the
 * election (the follower's {@code /readyz} answers 200, not 503).
 */
@EnableKubernetesMockClient(crud = true)
class LeaderElectionTest {

    static KubernetesMockServer server;
    static KubernetesClient client;

    private static final Duration LEASE = Duration.ofMillis(3000);
    private static final Duration RETRY = Duration.ofMillis(250);
    /** Allowance for thread scheduling on a loaded build machine, on top of the protocol's bound. */
    private static final Duration SLACK = Duration.ofSeconds(2);

    private final List<Main.Running> replicas = new ArrayList<>();

    @BeforeAll
    static void nodes() {
        for (String n : List.of("gpu-a", "gpu-b", "gpu-c", "cpu-d")) {
            client.nodes().resource(TestSupport.node(n)).create();
        }
    }

    @BeforeEach
    void pods() {
        client.pods().inNamespace("team-a").resource(TestSupport.pod("pod-infer.json")).create();
        client.pods().inNamespace("team-b").resource(TestSupport.pod("pod-train.json")).create();
    }

    @AfterEach
    void stop() {
        replicas.forEach(Main.Running::close);
        for (String ns : List.of("team-a", "team-b")) {
            client.pods().inNamespace(ns).delete();
            client.bindings().inNamespace(ns).delete();
        }
        client.leases().inNamespace("kube-system").delete();
    }

    private Main.Running replica(String identity) throws Exception {
        Main.Running r = Main.start(Main.parse(new String[] {"--host", "127.0.0.1", "--port", "0", "--sync-timeout", "20s",
                "--leader-elect", "--lease-namespace", "kube-system", "--identity", identity,
                "--lease-duration", LEASE.toMillis() + "ms", "--renew-deadline", "2000ms", "--retry-period", RETRY.toMillis() + "ms"}),
                client);
        replicas.add(r);
        return r;
    }

    private static int readyz(Main.Running r) {
        return TestSupport.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + r.server().port() + "/readyz"))
                .timeout(Duration.ofSeconds(10)).GET().build()).statusCode();
    }

    private static HttpResponse<String> bind(Main.Running r, String ns, String name, String node) {
        String uid = client.pods().inNamespace(ns).withName(name).get().getMetadata().getUid();
        byte[] body = ("{\"PodName\":\"" + name + "\",\"PodNamespace\":\"" + ns + "\",\"PodUID\":\"" + uid + "\",\"Node\":\"" + node + "\"}")
                .getBytes(StandardCharsets.UTF_8);
        return TestSupport.post(r.server().baseUrl() + "/bind", body);
    }

    /**
     * Waits (woken by the election's own state changes, no polling) until the condition holds; returns
     * how long it took, or fails after {@code bound}.
     */
    private static Duration await(LeaderElection e, Predicate<LeaderElection> condition, Duration bound, String what)
            throws InterruptedException {
        long t0 = System.nanoTime();
        if (!e.await(condition, bound)) {
            throw new AssertionError(what + " did not happen within " + bound);
        }
        return Duration.ofNanos(System.nanoTime() - t0);
    }

    /**
     * Asserts the bind succeeded, then does what the real API server does with the Binding and the mock
     * does not: sets the pod's {@code spec.nodeName} to the Binding's target.
     */
    private static void assertBound(HttpResponse<String> r, String ns, String name) {
        assertEquals(200, r.statusCode(), r.body());
        JsonNode j = TestSupport.tree(r.body());
        assertTrue(!j.has("Error") || j.get("Error").asText().isEmpty(), r.body());
        String node = client.bindings().inNamespace(ns).withName(name).get().getTarget().getName();
        client.pods().inNamespace(ns).withName(name).edit(p -> new PodBuilder(p).editSpec().withNodeName(node).endSpec().build());
    }

    @Test
    void onlyTheLeaderBindsAndAFollowerTakesOverAfterTheLeaderCrashesWithTheLedgerRebuilt() throws Exception {
        Main.Running a = replica("replica-a");
        await(a.election(), LeaderElection::leading, Duration.ofSeconds(20), "replica-a leading");
        Main.Running b = replica("replica-b");
        await(b.election(), e -> e.leader().isPresent(), Duration.ofSeconds(20), "replica-b seeing the leader");

        // the follower: not ready, refuses every verb with 503 and names the leader
        assertEquals(200, readyz(a));
        assertEquals(503, readyz(b));
        HttpResponse<String> refused = bind(b, "team-a", "infer-0", "gpu-a");
        assertEquals(503, refused.statusCode(), refused.body());
        assertTrue(refused.body().contains("the leader is replica-a"), refused.body());
        assertEquals(503, TestSupport.post(b.server().baseUrl() + "/filter", TestSupport.payload("filter-names-infer.json")).statusCode());
        assertEquals(503, TestSupport.post(b.server().baseUrl() + "/prioritize",
                TestSupport.payload("prioritize-names-infer.json")).statusCode());
        assertEquals(503, TestSupport.post(b.server().baseUrl() + "/preempt", ("{\"Pod\":" + TestSupport.text("payloads/pod-infer.json")
                + ",\"NodeNameToMetaVictims\":{}}").getBytes(java.nio.charset.StandardCharsets.UTF_8)).statusCode());
        assertFalse(client.pods().inNamespace("team-a").withName("infer-0").get().getMetadata().getAnnotations()
                .containsKey(QgpuAnnotations.PLACEMENT), "the refused bind wrote nothing");

        // the leader binds; the follower's ledger does not know that placement
        assertBound(bind(a, "team-a", "infer-0", "gpu-a"), "team-a", "infer-0");
        Placement made = a.extender().ledger().placement("team-a/infer-0").orElseThrow();
        assertFalse(b.extender().ledger().placement("team-a/infer-0").isPresent());

        // the leader crashes: it stops renewing and does not give the Lease back
        a.election().abandon();
        a.server().stop();
        Duration took = await(b.election(), LeaderElection::leading, LEASE.plus(RETRY.multipliedBy(2)).plus(SLACK), "replica-b taking over");
        assertEquals(200, readyz(b));
        Lease lease = client.leases().inNamespace("kube-system").withName("qgpu-scheduler-extender").get();
        assertEquals("replica-b", lease.getSpec().getHolderIdentity());
        assertTrue(took.compareTo(LEASE.plus(RETRY.multipliedBy(2)).plus(SLACK)) <= 0, "took " + took);

        // the new leader rebuilt its ledger from the pods' annotations: the placement it did not make is there
        Placement rebuilt = b.extender().ledger().placement("team-a/infer-0").orElseThrow();
        assertEquals(QgpuJson.writePlacement(made), QgpuJson.writePlacement(rebuilt));
        // and it binds
        assertBound(bind(b, "team-b", "train-0", "gpu-b"), "team-b", "train-0");
        Pod train = client.pods().inNamespace("team-b").withName("train-0").get();
        assertNotNull(train.getMetadata().getAnnotations().get(QgpuAnnotations.PLACEMENT));
        assertTrue(b.extender().ledger().placement("team-b/train-0").isPresent());
    }

    @Test
    void aLeaderThatStopsGivesTheLeaseBackAndTheFollowerTakesOverWithinTheLeaseDuration() throws Exception {
        Main.Running a = replica("replica-a");
        await(a.election(), LeaderElection::leading, Duration.ofSeconds(20), "replica-a leading");
        Main.Running b = replica("replica-b");
        await(b.election(), e -> e.leader().isPresent(), Duration.ofSeconds(20), "replica-b seeing the leader");
        assertBound(bind(a, "team-a", "infer-0", "gpu-a"), "team-a", "infer-0");

        a.close(); // what the shutdown hook does: the Lease is released first
        await(b.election(), LeaderElection::leading, LEASE, "replica-b taking over after a clean stop");
        assertTrue(b.extender().ledger().placement("team-a/infer-0").isPresent());
        assertEquals(200, readyz(b));
    }

    @Test
    void flagsAreCheckedAndLeaderElectionNeedsAKubernetesApi() {
        assertThrows(InvalidValueException.class, () -> Main.leaderSettings(Main.parse(new String[] {"--leader-elect",
                "--lease-duration", "2s", "--renew-deadline", "2s"})));
        assertThrows(InvalidValueException.class, () -> Main.leaderSettings(Main.parse(new String[] {"--leader-elect",
                "--retry-period", "soon"})));
        LeaderElection.Settings s = Main.leaderSettings(Main.parse(new String[] {"--leader-elect", "--identity", "x"}));
        assertEquals(List.of(Duration.ofSeconds(15), Duration.ofSeconds(10), Duration.ofSeconds(2)),
                List.of(s.leaseDuration(), s.renewDeadline(), s.retryPeriod()));
        assertThrows(IllegalArgumentException.class, () -> Main.start(Main.parse(new String[] {"--demo", "--leader-elect",
                "--inventory", "examples/inventory.json", "--port", "0"})));
    }
}
