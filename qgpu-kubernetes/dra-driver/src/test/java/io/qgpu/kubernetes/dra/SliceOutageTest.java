package io.qgpu.kubernetes.dra;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.resource.v1.Device;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSlice;
import io.qgpu.kubernetes.node.FaultyApiServer;
import io.qgpu.kubernetes.node.reconcile.NodeReconciler;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 37, case 3: a GPU turns unhealthy while the API server is away for longer than the client's own retries
 * (or answers 4xx, or a conflict). The slice is published once the API server answers again: the reconciler
 * retries the slice with back-off, and a later Xid of the same GPU is not needed for it. Driven by the test's
 * clock: the back-off is 1 s doubling to 8 s, so the slice is right at the first retry after the API server's
 * return, at most 8 s of the driver's clock later.
 */
class SliceOutageTest extends DriverTestBase {
    static final NodeReconciler.Settings SETTINGS = new NodeReconciler.Settings(Duration.ofHours(1), Duration.ofSeconds(1),
            Duration.ofSeconds(8));
    FaultyApiServer api;

    @BeforeEach
    void api() {
        api = new FaultyApiServer();
    }

    @AfterEach
    void closeApi() {
        api.close();
    }

    DraDriver startOnFaultyApi() throws Exception {
        DraDriver d = DraDriver.start(config("t4x4").withReconcile(SETTINGS, Duration.ZERO), api.client());
        open.add(d);
        return d;
    }

    List<String> published() {
        ResourceSlice s = api.client().resources(ResourceSlice.class).withName("node-a-gpu.qgpu.io").get();
        return s.getSpec().getDevices().stream().map(Device::getName).toList();
    }

    /** Waits until the driver has taken the GPU's Xid in (NVML's event thread). */
    void awaitUnhealthy(DraDriver d, String device) {
        long deadline = System.nanoTime() + Kubelet.DEADLINE_SECONDS * 1_000_000_000L;
        while (d.slices().slice().getSpec().getDevices().stream().anyMatch(x -> x.getName().equals(device))) {
            assertTrue(System.nanoTime() < deadline, "the driver never took the Xid in");
            Thread.onSpinWait();
        }
    }

    void advance(Duration d) {
        clock.addAndGet(d.toNanos());
    }

    @Test
    void aHealthChangeIsPublishedOnceTheApiServerAnswersAgain() throws Exception {
        DraDriver d = startOnFaultyApi();
        assertEquals(List.of("gpu-0", "gpu-1", "gpu-2", "gpu-3"), published());
        api.down();
        assertEquals(1, FAKE.fake_nvml_inject_xid(2, 48));
        awaitUnhealthy(d, "gpu-2");
        assertFalse(d.reconciler().reconcile().converged(), "the API server is down: the slice cannot be published");
        assertTrue(api.injected() >= FaultyApiServer.ATTEMPTS, "the client gave up after its own retries");
        advance(Duration.ofSeconds(1));
        assertFalse(d.reconciler().reconcile().converged(), "still down");
        api.up();
        // no further Xid: the retry alone publishes it, at the back-off's end
        assertFalse(d.reconciler().failures().isEmpty());
        advance(Duration.ofSeconds(2));
        assertTrue(d.reconciler().reconcile().converged(), () -> d.reconciler().failures().toString());
        assertEquals(List.of("gpu-0", "gpu-1", "gpu-3"), published(), "the broken GPU is no longer advertised");
    }

    @Test
    void aRefusedOrConflictingWriteIsRetriedToo() throws Exception {
        DraDriver d = startOnFaultyApi();
        api.failNext(1, 403, FaultyApiServer.Match.of("PUT", "/resourceslices/"));
        api.failNext(1, 409, FaultyApiServer.Match.of("PUT", "/resourceslices/"));
        assertEquals(1, FAKE.fake_nvml_inject_xid(1, 48));
        awaitUnhealthy(d, "gpu-1");
        NodeReconciler.Report first = d.reconciler().reconcile();
        // the timer may have run a pass already, taking the 403; either way one of the two failures is seen here
        long failed = first.failures().size() + (api.requests().stream().anyMatch(x -> x.code() == 403) ? 1 : 0);
        assertTrue(failed >= 1, first.toString());
        for (int i = 0; i < 4 && !d.reconciler().failures().isEmpty(); i++) {
            advance(Duration.ofSeconds(8));
            d.reconciler().reconcile();
        }
        assertTrue(d.reconciler().failures().isEmpty(), () -> d.reconciler().failures().toString());
        assertEquals(List.of("gpu-0", "gpu-2", "gpu-3"), published());
        assertTrue(api.requests().stream().anyMatch(x -> x.code() == 403) && api.requests().stream().anyMatch(x -> x.code() == 409),
                "both faults were met: " + api.requests());
    }
}
