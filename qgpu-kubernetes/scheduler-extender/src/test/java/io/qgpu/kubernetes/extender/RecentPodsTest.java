package io.qgpu.kubernetes.extender;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.fabric8.kubernetes.api.model.Pod;
import io.qgpu.api.GranularityRules;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * The memos of the last pods: a pod is found only by exactly the bytes it was read from (at any
 * offset), prioritize after filter gets the very pod filter read, and a claim is found only for the
 * very pod object it was made for; a pod whose claim is refused is refused every time.
 */
class RecentPodsTest {

    @Test
    void aPodIsFoundByExactlyItsBytes() {
        RecentPods pods = new RecentPods();
        byte[] a = "xx{\"metadata\":{\"name\":\"a\"}}yy".getBytes(StandardCharsets.UTF_8);
        Pod pod = new Pod();
        assertNull(pods.find(a, 2, a.length - 4));
        pods.file(a, 2, a.length - 4, pod);
        byte[] same = "{\"metadata\":{\"name\":\"a\"}}".getBytes(StandardCharsets.UTF_8);
        assertSame(pod, pods.find(same, 0, same.length));
        byte[] other = "{\"metadata\":{\"name\":\"b\"}}".getBytes(StandardCharsets.UTF_8);
        assertNull(pods.find(other, 0, other.length));
        assertNull(pods.find(same, 0, same.length - 1));
    }

    @Test
    void prioritizeGetsThePodFilterRead() {
        LoadRequests requests = new LoadRequests(20, 5);
        RecentPods pods = new RecentPods();
        byte[] pod = LoadRequests.pod(3);
        ExtenderRequests.Args filter = ExtenderRequests.parseArgs(requests.filter(3, pod), NodeNameTable.EMPTY, pods);
        ExtenderRequests.Args prioritize = ExtenderRequests.parseArgs(LoadRequests.args(pod, LoadRequests.namesArray(
                java.util.List.of("node-3", "node-4"))), NodeNameTable.EMPTY, pods);
        assertSame(filter.pod(), prioritize.pod());
        assertEquals(ExtenderRequests.parseArgs(requests.filter(3, pod)).pod(), prioritize.pod());
        ExtenderRequests.Args next = ExtenderRequests.parseArgs(requests.filter(4, LoadRequests.pod(4)), NodeNameTable.EMPTY, pods);
        assertEquals("load-4", next.pod().getMetadata().getName());
    }

    @Test
    void aClaimIsFoundForTheVeryPodObjectOnly() {
        PodClaims claims = new PodClaims(GranularityRules.ofDefaults());
        RecentClaims recent = new RecentClaims(claims);
        Pod pod = ExtenderRequests.parseArgs(new LoadRequests(20, 5).filter(1, LoadRequests.pod(1))).pod();
        var first = recent.claimOf(pod);
        assertNotNull(first.orElseThrow());
        assertSame(first, recent.claimOf(pod));
        Pod copy = ExtenderRequests.parseArgs(new LoadRequests(20, 5).filter(1, LoadRequests.pod(1))).pod();
        assertEquals(first, recent.claimOf(copy));
        Pod bad = ExtenderRequests.parseArgs(new LoadRequests(20, 5).filter(2, LoadRequests.pod(2))).pod();
        bad.getSpec().getContainers().get(0).getResources().getLimits().put("qgpu.io/gpu-typo", new io.fabric8.kubernetes.api.model.Quantity("1"));
        BadRequestException e1 = assertThrows(BadRequestException.class, () -> recent.claimOf(bad));
        BadRequestException e2 = assertThrows(BadRequestException.class, () -> recent.claimOf(bad));
        assertEquals(e1.getMessage(), e2.getMessage());
    }
}
