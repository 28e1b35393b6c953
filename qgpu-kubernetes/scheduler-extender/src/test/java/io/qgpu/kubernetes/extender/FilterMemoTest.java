package io.qgpu.kubernetes.extender;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.Health;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The memo keeps, with a refused node, whether the node could take the pod's shape if it were empty
 * (filter's {@code FailedNodes} or {@code FailedAndUnresolvableNodes}): a filter answered from the
 * memo puts every node where a new extender, which has nothing in its memo, puts it, with the same
 * text, through reservations, a release, a GPU turning unhealthy and back, and a node too small for
 * the shape.
 */
class FilterMemoTest {

    @Test
    void aFilterAnsweredFromTheMemoSortsRefusedNodesAsAFreshCheckDoes() {
        List<Node> nodes = new ArrayList<>();
        nodes.add(node("big", 8, 80));
        nodes.add(node("small", 1, 16));   // one GPU: never two
        nodes.add(node("busy", 2, 16));
        nodes.add(node("mid", 2, 80));
        Ledger ledger = Ledger.create(nodes);
        GpuExtender memo = new GpuExtender(ledger, PlacementConfig.defaults(), new DemoCluster());
        List<String> names = List.of("big", "small", "busy", "mid", "unknown");
        int pod = 0;

        same(memo, ledger, pod(pod++), names);
        same(memo, ledger, pod(pod++), names);   // the same shape again: from the memo
        for (int k = 0; k < 2; k++) {            // busy full: refused, but it could take the pod empty
            Claim c = Claim.builder("fill/b" + k).memoryGiB(16).build();
            assertTrue(ledger.reserve(new Placement(c, "busy", List.of(new io.qgpu.api.Slice("GPU-busy-" + k, 16 * GpuDevice.GIB,
                    0, 100)))).reserved());
        }
        same(memo, ledger, pod(pod++), names);
        same(memo, ledger, pod(pod++), names);
        for (int g = 1; g < 8; g++) {            // big down to one healthy GPU: it could never take two
            ledger.setHealth("GPU-big-" + g, Health.UNHEALTHY);
        }
        same(memo, ledger, pod(pod++), names);
        same(memo, ledger, pod(pod++), names);
        ledger.release("fill/b0");
        for (int g = 1; g < 8; g++) {
            ledger.setHealth("GPU-big-" + g, Health.HEALTHY);
        }
        same(memo, ledger, pod(pod++), names);
        same(memo, ledger, pod(pod++), names);
        long[] counts = memo.checkCounts();
        assertTrue(counts[0] >= 8, "answers from the memo: " + counts[0]);
    }

    /** The memo's filter against a new extender's (an empty memo) on the same ledger. */
    private static void same(GpuExtender memo, Ledger ledger, Pod pod, List<String> names) {
        ExtenderRequests.Args args = new ExtenderRequests.Args(pod, true, names, Map.of(), null);
        ExtenderProtocol.FilterResult got = memo.filter(args);
        ExtenderProtocol.FilterResult want = new GpuExtender(ledger, PlacementConfig.defaults(), new DemoCluster()).filter(args);
        assertEquals(want, got);
        assertTrue(got.failedAndUnresolvableNodes().containsKey("small"), got.toString());
    }

    private static Node node(String name, int gpus, int gib) {
        Node.Builder b = Node.builder(name).defaultLink(new io.qgpu.api.GpuLink.NvLink(18));
        for (int g = 0; g < gpus; g++) {
            b.gpu(GpuDevice.builder("GPU-" + name + "-" + g).index(g).memoryGiB(gib).build());
        }
        return b.build();
    }

    /** Pod {@code i}: two GPUs with 8 GiB each, in one shape. */
    private static Pod pod(int i) {
        return new PodBuilder().withNewMetadata().withName("p" + i).withNamespace("ns").withUid("uid-" + i).endMetadata()
                .withNewSpec().addNewContainer().withName("main").withNewResources()
                .addToLimits("qgpu.io/gpu", new Quantity("2")).addToLimits("qgpu.io/gpu-memory", new Quantity("8"))
                .endResources().endContainer().endSpec().build();
    }
}
