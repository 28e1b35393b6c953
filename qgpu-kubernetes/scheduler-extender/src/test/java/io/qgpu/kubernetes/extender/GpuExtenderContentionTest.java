package io.qgpu.kubernetes.extender;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.qgpu.api.NodeState;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Many threads filter, prioritize, bind and delete at once: the ledger stays consistent with the answers. */
class GpuExtenderContentionTest {

    private static final List<String> NODES = List.of("gpu-a", "gpu-b", "gpu-c", "cpu-d");

    private static Pod replica(Pod template, int i) {
        return new PodBuilder(template).editMetadata().withName("infer-" + i).withUid("uid-" + i)
                .removeFromAnnotations(QgpuAnnotations.ANTI_AFFINITY).endMetadata().build();
    }

    @Test
    void concurrentBindsNeverOversubscribeAndMatchTheirAnswers() throws Exception {
        Ledger ledger = Ledger.create(TestSupport.inventory().rules(), TestSupport.inventory().nodes());
        DemoCluster demo = new DemoCluster();
        GpuExtender ext = new GpuExtender(ledger, PlacementConfig.defaults(), demo);
        Pod template = TestSupport.pod("pod-infer.json");      // 8 GiB, 30% online compute per pod
        int pods = 120;
        for (int i = 0; i < pods; i++) {
            demo.remember(replica(template, i));
        }
        ExtenderRequests.Args args = ExtenderRequests.parseArgs(TestSupport.payload("filter-names-infer.json"));
        Set<String> boundOk = ConcurrentHashMap.newKeySet();
        Set<String> deleted = ConcurrentHashMap.newKeySet();
        int threads = 6;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch go = new CountDownLatch(1);
        List<Future<?>> done = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int id = t;
            done.add(pool.submit(() -> {
                SplittableRandom rnd = new SplittableRandom(1000 + id);
                go.await();
                for (int k = 0; k < 60; k++) {
                    int i = rnd.nextInt(pods);
                    String node = NODES.get(rnd.nextInt(NODES.size()));
                    switch (rnd.nextInt(4)) {
                        case 0 -> ext.filter(args);
                        case 1 -> ext.prioritize(args);
                        case 2 -> {
                            deleted.add("team-a/infer-" + i);
                            ext.podGone(replica(template, i));
                        }
                        default -> {
                            String error = ext.bind(new ExtenderProtocol.BindingArgs("infer-" + i, "team-a", "uid-" + i, node)).error();
                            if (error.isEmpty()) {
                                boundOk.add("team-a/infer-" + i);
                            }
                        }
                    }
                }
                return null;
            }));
        }
        go.countDown();
        for (Future<?> f : done) {
            f.get(60, TimeUnit.SECONDS);
        }
        pool.shutdown();
        // only successful binds hold reservations, and a successful bind lost its reservation only to a delete
        Set<String> held = ConcurrentHashMap.newKeySet();
        ledger.placements().forEach(p -> held.add(p.tenantId()));
        assertTrue(boundOk.containsAll(held), "held without a successful bind: " + held);
        Set<String> lost = new java.util.HashSet<>(boundOk);
        lost.removeAll(held);
        assertTrue(deleted.containsAll(lost), "released without a delete: " + lost);
        // no GPU is oversubscribed: the snapshot restores into a fresh ledger, which re-checks every rule
        Ledger.of(ledger.snapshot());
        for (NodeState n : ledger.nodes()) {
            n.gpus().forEach(g -> assertTrue(g.memoryFree() >= 0, g.uuid()));
        }
        // each bound pod carries exactly the decision the ledger holds
        for (String t : held) {
            String name = t.substring(t.indexOf('/') + 1);
            assertEquals(ledger.placement(t).orElseThrow(), io.qgpu.json.QgpuJson.readPlacement(
                    demo.pod("team-a", name).orElseThrow().getMetadata().getAnnotations().get(QgpuAnnotations.PLACEMENT)));
        }
        assertTrue(held.size() > 5, "some binds succeeded: " + held.size());
    }
}
