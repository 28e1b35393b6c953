package io.qgpu.kubernetes.deviceplugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.grpc.Status;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.Topology;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementEngine;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A multi-container {@code Allocate} is all or nothing, the pods' decision marks included: when
 * marking the second container's pod fails, the first pod's mark is taken back with the devices, the
 * ledger and the saved state. Checked both when the failing mark was not written and when it was
 * written before the call failed (a timeout after the API server applied the patch).
 *
 * <p>Fails on the code before the rollback took marks back: the first pod stayed marked
 * ({@code applied} held {@code infer/first}), so the extender's decision for it was never offered
 * again.
 */
class AllocateDecisionRollbackTest {

    /** Records marks like {@link RecordingDecisions}; the mark of {@code failOn} fails while {@code failing}. */
    static final class FailingDecisions implements PodDecisions {
        final RecordingDecisions inner = new RecordingDecisions();
        final String failOn;
        final boolean writeThenFail;
        boolean failing = true;
        final List<String> withdrawn = new ArrayList<>();

        FailingDecisions(String failOn, boolean writeThenFail) {
            this.failOn = failOn;
            this.writeThenFail = writeThenFail;
        }

        @Override
        public List<PendingPod> pending(int gpuCount) {
            return inner.pending(gpuCount);
        }

        @Override
        public void applied(PendingPod pod, List<String> deviceIds) {
            if (failing && pod.key().equals(failOn)) {
                if (writeThenFail) {
                    inner.applied(pod, deviceIds);
                }
                throw new PluginException(Status.Code.UNAVAILABLE, "pod " + pod.key() + ": cannot set the mark");
            }
            inner.applied(pod, deviceIds);
        }

        @Override
        public void withdrawn(PendingPod pod) {
            withdrawn.add(pod.key());
            inner.withdrawn(pod);
        }
    }

    @ParameterizedTest(name = "the failing mark written first: {0}")
    @ValueSource(booleans = {false, true})
    void aFailedMarkOfTheSecondPodTakesBackTheFirstPodsMark(boolean writeThenFail) {
        List<GpuDevice> gpus = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            gpus.add(GpuDevice.builder("GPU-" + i).index(i).model("H100").memoryBytes(80 * GpuDevice.GIB).build());
        }
        Node node = new Node("node-a", Map.of(), gpus, Topology.uniform(2, new GpuLink.NvLink(18)));
        Ledger ledger = Ledger.create(GranularityRules.custom().maxTenantsPerGpu(4).memoryPerTenantSlotBytes(0).build(),
                List.of(node));
        PoolContentionTest.MemoryStore store = new PoolContentionTest.MemoryStore();
        FailingDecisions d = new FailingDecisions("infer/second", writeThenFail);
        d.inner.pod("infer", "first", 8, 10, 50, "GPU-0").pod("infer", "second", 8, 10, 50, "GPU-1");
        VirtualDevicePool pool = new VirtualDevicePool(node, ledger, PlacementEngine.create(ledger), d, store, GpuDevice.GIB);
        List<List<String>> request = List.of(List.of(VirtualDevice.idOf("GPU-0", 0)), List.of(VirtualDevice.idOf("GPU-1", 0)));

        PluginException e = assertThrows(PluginException.class, () -> pool.allocate(request));
        assertEquals(Status.Code.UNAVAILABLE, e.code());
        assertEquals(Map.of(), d.inner.applied, "no pod stays marked");
        assertEquals(List.of("infer/first", "infer/second"), d.withdrawn);
        assertEquals(List.of(), pool.allocations());
        assertEquals(0, ledger.size());
        assertEquals(List.of(), store.last);
        assertEquals(2, d.pending(1).size(), "both decisions are offered again");

        d.failing = false;
        List<Allocation> got = pool.allocate(request);
        assertEquals(List.of("infer/first", "infer/second"), got.stream().map(Allocation::tenantId).toList());
        assertEquals(Set.of("infer/first", "infer/second"), d.inner.applied.keySet());
        assertEquals(2, ledger.size());
    }
}
