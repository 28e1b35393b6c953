package io.qgpu.kubernetes.dra;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.qgpu.kubernetes.dra.v1.DRAPluginGrpc;
import io.qgpu.kubernetes.dra.v1.NodePrepareResourcesResponse;
import io.qgpu.kubernetes.node.FaultyApiServer;
import io.qgpu.kubernetes.node.sharing.SharingOptions;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 38, item 3: the containers that use a claim, found at prepare through the pods in its
 * {@code status.reservedFor}. Under {@code --sharing hami-core} a shared claim used by more than one container
 * (of one pod or of several, init containers included) is refused: HAMi-core's one cache file per claim cannot
 * hold their accounting apart. With any back end a container gets at most one claim of this driver: of two in
 * one container, the one prepared later on the node (the second in request order within one call) is refused.
 * Pods that cannot be read refuse the claim, so that the kubelet retries.
 */
class ClaimContainersTest extends DriverTestBase {
    DRAPluginGrpc.DRAPluginBlockingStub stub;
    DraDriver driver;
    Path cacheRoot;

    @BeforeEach
    void noPods() {
        client.pods().inAnyNamespace().delete();
    }

    void startHamiCore() throws IOException {
        startHamiCore(client);
    }

    void startHamiCore(KubernetesClient api) throws IOException {
        Path lib = Files.writeString(tmp.resolve("libvgpu.so"), "any file");
        cacheRoot = tmp.resolve("hami-cache");
        SharingOptions o = SharingOptions.parse(Map.of("--sharing", "hami-core", "--hami-core-library", lib.toString(),
                "--hami-core-cache-root", cacheRoot.toString(), "--hami-core-lock-dir", tmp.resolve("vgpulock").toString()));
        driver = DraDriver.start(config("dgx-h100").withSharing(o), api);
        open.add(driver);
        stub = kubelet.v1(register());
    }

    void startWithoutBackEnd(KubernetesClient api) throws IOException {
        driver = DraDriver.start(config("dgx-h100"), api);
        open.add(driver);
        stub = kubelet.v1(register());
    }

    /** The claim's error in a NodePrepareResources call of its own ("" when prepared). */
    String prepare(String name, String uid) {
        return Kubelet.prepare(stub, Kubelet.claim(Claims.NS, name, uid)).getClaimsOrThrow(uid).getError();
    }

    boolean prepared(String uid) {
        return driver.claims().get(uid).isPresent() && Files.exists(spec(uid));
    }

    boolean nothingOf(String uid) {
        return driver.claims().get(uid).isEmpty() && !Files.exists(spec(uid)) && !driver.claims().ledgerTenants().contains(uid);
    }

    Path spec(String uid) {
        return cdi.resolve("qgpu.io-gpu_" + uid + ".json");
    }

    @Test
    void aHamiCoreSharedClaimOfOneContainerIsPrepared() throws Exception {
        startHamiCore();
        String uid = Claims.allocated(client, "share", Claims.share("gpu-0", "8Gi", "40", null));
        Pod p = Pods.pod("p").claim("gpu", "share").init("setup", false).container("main", "gpu").container("logs").create(client);
        Claims.reserveFor(client, "share", p);
        assertEquals("", prepare("share", uid));
        assertTrue(prepared(uid));
        assertTrue(Files.isDirectory(cacheRoot.resolve(uid)), "the claim's cache directory, for its one container");
    }

    @Test
    void aHamiCoreSharedClaimOfTwoContainersOfOnePodIsRefusedNamingThem() throws Exception {
        startHamiCore();
        String uid = Claims.allocated(client, "share", Claims.share("gpu-0", "8Gi", "40", null));
        Pod p = Pods.pod("p").claim("gpu", "share").container("main", "gpu").container("side", "gpu").create(client);
        Claims.reserveFor(client, "share", p);
        String e = prepare("share", uid);
        assertTrue(e.contains("claim default/share (uid " + uid + ")") && e.contains("--sharing hami-core")
                && e.contains("used by 2 containers: pod default/p (container main, container side)")
                && e.contains("one claim per container") && e.contains("exclusive"), e);
        assertTrue(nothingOf(uid), "no reservation, saved claim or spec of a refused claim");
        assertFalse(Files.exists(cacheRoot.resolve(uid)));
        // the kubelet retries: the same answer, and the GPU is still whole
        assertEquals(e, prepare("share", uid));
        String whole = Claims.allocated(client, "whole", Claims.whole("gpu-0"));
        assertEquals("", prepare("whole", whole));
    }

    @Test
    void containersOfSeveralPodsAndInitContainersCountTogether() throws Exception {
        startHamiCore();
        // one ResourceClaim named by two pods: their containers write the same cache file
        String byPods = Claims.allocated(client, "by-pods", Claims.share("gpu-0", "8Gi", "40", null));
        Pod a = Pods.pod("a").claim("gpu", "by-pods").container("main", "gpu").create(client);
        Pod b = Pods.pod("b").claim("gpu", "by-pods").container("main", "gpu").create(client);
        Claims.reserveFor(client, "by-pods", a, b);
        String e = prepare("by-pods", byPods);
        assertTrue(e.contains("used by 2 containers: pod default/a (container main), pod default/b (container main)"), e);
        assertTrue(nothingOf(byPods));

        // a sidecar (an init container that keeps running) beside the container that uses the claim
        String sidecar = Claims.allocated(client, "sidecar", Claims.share("gpu-1", "8Gi", "40", null));
        Pod c = Pods.pod("c").claim("gpu", "sidecar").init("proxy", true, "gpu").container("main", "gpu").create(client);
        Claims.reserveFor(client, "sidecar", c);
        String s = prepare("sidecar", sidecar);
        assertTrue(s.contains("used by 2 containers: pod default/c (init container proxy, container main)"), s);

        // a plain init container writes the same file before the container does
        String before = Claims.allocated(client, "before", Claims.share("gpu-2", "8Gi", "40", null));
        Pod d = Pods.pod("d").claim("gpu", "before").init("warm-up", false, "gpu").container("main", "gpu").create(client);
        Claims.reserveFor(client, "before", d);
        String w = prepare("before", before);
        assertTrue(w.contains("used by 2 containers: pod default/d (init container warm-up, container main)"), w);
    }

    @Test
    void anExclusiveClaimUsedByTwoContainersIsPrepared() throws Exception {
        startHamiCore();
        String uid = Claims.allocated(client, "whole", Claims.whole("gpu-1"));
        Pod p = Pods.pod("p").claim("gpu", "whole").container("main", "gpu").container("side", "gpu").create(client);
        Claims.reserveFor(client, "whole", p);
        assertEquals("", prepare("whole", uid));
        assertTrue(prepared(uid));
        // nothing shares the GPU: no HAMi-core, no cache file for the containers to fight over
        JsonNode spec = new ObjectMapper().readTree(spec(uid).toFile());
        assertEquals("none", SharingTest.env(spec).get("QGPU_SHARING"));
        assertFalse(SharingTest.env(spec).containsKey("CUDA_DEVICE_MEMORY_SHARED_CACHE"));
        assertFalse(Files.exists(cacheRoot.resolve(uid)));
    }

    @Test
    void withoutHamiCoreTheContainersOfAClaimMayShareIt() throws Exception {
        startWithoutBackEnd(client);
        String uid = Claims.allocated(client, "share", Claims.share("gpu-0", "8Gi", "40", null));
        Pod p = Pods.pod("p").claim("gpu", "share").container("main", "gpu").container("side", "gpu").create(client);
        Claims.reserveFor(client, "share", p);
        assertEquals("", prepare("share", uid));
        assertTrue(prepared(uid));
    }

    /** Two claims of this driver, {@code first} and {@code second}, both used by container {@code main} of a new pod. */
    List<String> twoClaimsInOneContainer(String pod, String first, String second, int gpu) {
        String u1 = Claims.allocated(client, first, Claims.share("gpu-" + gpu, "8Gi", "20", null));
        String u2 = Claims.allocated(client, second, Claims.whole("gpu-" + (gpu + 1)));
        Pod p = Pods.pod(pod).claim("one", first).claim("two", second).container("main", "one", "two").container("other", "one")
                .create(client);
        Claims.reserveFor(client, first, p);
        Claims.reserveFor(client, second, p);
        return List.of(u1, u2);
    }

    static void assertRefusedFor(String error, String uid, String otherKey, String otherUid) {
        assertTrue(error.contains(uid) && error.contains("container main of pod default/")
                && error.contains("also uses claim " + otherKey + " (uid " + otherUid + ") of driver gpu.qgpu.io, prepared on this node")
                && error.contains("one claim of driver gpu.qgpu.io per container"), error);
    }

    @Test
    void ofTwoQgpuClaimsInOneContainerTheOnePreparedLaterIsRefusedInEitherOrder() throws Exception {
        startWithoutBackEnd(client);
        List<String> xy = twoClaimsInOneContainer("p", "x", "y", 0);
        assertEquals("", prepare("x", xy.get(0)));
        String e = prepare("y", xy.get(1));
        assertRefusedFor(e, xy.get(1), "default/x", xy.get(0));
        assertTrue(prepared(xy.get(0)));
        assertTrue(nothingOf(xy.get(1)));

        // the other order: the second claim prepared first, then the first is refused
        List<String> ab = twoClaimsInOneContainer("q", "a", "b", 2);
        assertEquals("", prepare("b", ab.get(1)));
        assertRefusedFor(prepare("a", ab.get(0)), ab.get(0), "default/b", ab.get(1));
        assertTrue(nothingOf(ab.get(0)));

        // the rule is about what is prepared now: once x is unprepared, y is prepared
        assertEquals("", Kubelet.unprepare(stub, Kubelet.claim(Claims.NS, "x", xy.get(0))).getClaimsOrThrow(xy.get(0)).getError());
        assertEquals("", prepare("y", xy.get(1)));
    }

    @Test
    void ofTwoQgpuClaimsInOneContainerInOneCallTheSecondInRequestOrderIsRefused() throws Exception {
        startWithoutBackEnd(client);
        List<String> xy = twoClaimsInOneContainer("p", "x", "y", 0);
        NodePrepareResourcesResponse r = Kubelet.prepare(stub, Kubelet.claim(Claims.NS, "x", xy.get(0)),
                Kubelet.claim(Claims.NS, "y", xy.get(1)));
        assertEquals("", r.getClaimsOrThrow(xy.get(0)).getError());
        assertRefusedFor(r.getClaimsOrThrow(xy.get(1)).getError(), xy.get(1), "default/x", xy.get(0));

        List<String> ab = twoClaimsInOneContainer("q", "a", "b", 2);
        NodePrepareResourcesResponse ba = Kubelet.prepare(stub, Kubelet.claim(Claims.NS, "b", ab.get(1)),
                Kubelet.claim(Claims.NS, "a", ab.get(0)));
        assertEquals("", ba.getClaimsOrThrow(ab.get(1)).getError());
        assertRefusedFor(ba.getClaimsOrThrow(ab.get(0)).getError(), ab.get(0), "default/b", ab.get(1));
        assertEquals(Set.of(xy.get(0), ab.get(1)), Set.copyOf(driver.claims().ledgerTenants()));
        // the kubelet retries the call: the same answers
        NodePrepareResourcesResponse again = Kubelet.prepare(stub, Kubelet.claim(Claims.NS, "b", ab.get(1)),
                Kubelet.claim(Claims.NS, "a", ab.get(0)));
        assertEquals(ba, again);
    }

    @Test
    void aClaimOfAnotherDriverBesideAQgpuClaimIsPrepared() throws Exception {
        startWithoutBackEnd(client);
        Claims.allocated(client, "nic", Claims.ofDriver("net.example.com", "eth-1"));
        Claims.unallocated(client, "pending");
        String uid = Claims.allocated(client, "gpu", Claims.share("gpu-0", "8Gi", "20", null));
        Pod p = Pods.pod("p").claim("gpu", "gpu").claim("nic", "nic").claim("pending", "pending").claim("gone", "no-such-claim")
                .container("main", "gpu", "nic", "pending", "gone").create(client);
        Claims.reserveFor(client, "gpu", p);
        assertEquals("", prepare("gpu", uid));
        assertTrue(prepared(uid));
    }

    @Test
    void claimsMadeFromTemplatesAreFoundThroughThePodsStatus() throws Exception {
        startHamiCore();
        String uid = Claims.allocated(client, "p-gpu-x7k2q", Claims.share("gpu-0", "8Gi", "40", null));
        Pod p = Pods.pod("p").template("gpu", "qgpu-share-10gi-30", "p-gpu-x7k2q").template("none", "unused", null)
                .container("main", "gpu").container("side", "gpu", "none").create(client);
        Claims.reserveFor(client, "p-gpu-x7k2q", p);
        String e = prepare("p-gpu-x7k2q", uid);
        assertTrue(e.contains("used by 2 containers: pod default/p (container main, container side)"), e);

        // another pod's template entry of the same name generated another claim: not this one's container
        String own = Claims.allocated(client, "q-gpu-abcde", Claims.share("gpu-1", "8Gi", "40", null));
        Pod q = Pods.pod("q").template("gpu", "qgpu-share-10gi-30", "q-gpu-abcde").container("main", "gpu")
                .template("other", "qgpu-share-10gi-30", "q-other-zzzzz").container("side", "other").create(client);
        Claims.reserveFor(client, "q-gpu-abcde", q);
        assertEquals("", prepare("q-gpu-abcde", own));
    }

    @Test
    void podsThatAreGoneOrReplacedAndOtherConsumersAreSkipped() throws Exception {
        startHamiCore();
        String uid = Claims.allocated(client, "share", Claims.share("gpu-0", "8Gi", "40", null));
        Pod a = Pods.pod("a").claim("gpu", "share").container("main", "gpu").create(client);
        // b exists but as another pod than the one the claim was reserved for (deleted and created again)
        Pods.pod("b").claim("gpu", "share").container("main", "gpu").container("side", "gpu").create(client);
        Claims.reserveFor(client, "share", List.of(Claims.pod("a", a.getMetadata().getUid()),
                Claims.pod("b", "00000000-0000-0000-0000-00000000000b"), Claims.pod("ghost", "00000000-0000-0000-0000-000000000001"),
                new io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimConsumerReferenceBuilder().withApiGroup("example.com")
                        .withResource("jobs").withName("j").withUid("00000000-0000-0000-0000-000000000002").build()));
        assertEquals("", prepare("share", uid));
        assertTrue(prepared(uid));
    }

    @Test
    void podsThatCannotBeReadRefuseTheClaimUntilTheyCanBe() throws Exception {
        try (FaultyApiServer api = new FaultyApiServer()) {
            KubernetesClient c = api.client();
            startWithoutBackEnd(c);
            String uid = Claims.allocated(c, "share", Claims.share("gpu-0", "8Gi", "40", null));
            Pod p = Pods.pod("p").claim("gpu", "share").container("main", "gpu").create(c);
            Claims.reserveFor(c, "share", p);
            api.failNext(1, 403, FaultyApiServer.Match.path("/pods/"));
            String e = prepare("share", uid);
            assertTrue(e.contains("status.reservedFor[0] = pod default/p (uid " + p.getMetadata().getUid() + ")")
                    && e.contains("cannot be read") && e.contains("403") && e.contains("the kubelet retries"), e);
            assertTrue(nothingOf(uid));
            // the kubelet retries once the API server lets the driver read pods
            assertEquals("", prepare("share", uid));
            assertTrue(prepared(uid));

            // the other claim of a container that cannot be read: refused too
            String u1 = Claims.allocated(c, "one", Claims.share("gpu-1", "8Gi", "20", null));
            Claims.allocated(c, "two", Claims.whole("gpu-2"));
            Pod q = Pods.pod("q").claim("one", "one").claim("two", "two").container("main", "one", "two").create(c);
            Claims.reserveFor(c, "one", q);
            api.failNext(FaultyApiServer.ATTEMPTS, 503, FaultyApiServer.Match.path("/resourceclaims/two"));
            String o = prepare("one", u1);
            assertTrue(o.contains("claim default/two") && o.contains("used by container main of pod default/q")
                    && o.contains("cannot be read") && o.contains("503") && o.contains("the kubelet retries"), o);
            assertTrue(nothingOf(u1));
            assertEquals("", prepare("one", u1));
        }
    }
}
