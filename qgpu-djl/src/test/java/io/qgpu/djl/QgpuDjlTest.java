package io.qgpu.djl;

import static org.junit.jupiter.api.Assertions.*;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.IsolationPolicy;
import io.qgpu.api.PriorityClass;
import io.qgpu.core.gate.GateStateException;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A pod's tenant from its environment, with no other configuration: the gate, the policy, the quota. */
class QgpuDjlTest {

    @Test
    void fromTheEnvironmentTheTenantGetsItsQuotaOnTheGateOfItsGpu() {
        Map<String, String> env = Map.of("QGPU_PRIORITY", "online", "QGPU_TENANT", "ns/chat-1",
                "QGPU_COMPUTE_REQUEST", "20", "QGPU_COMPUTE_LIMIT", "40", "NVIDIA_VISIBLE_DEVICES", "GPU-djl-test-1");
        try (QgpuDjl djl = QgpuDjl.fromEnvironment(env)) {
            assertEquals("GPU-djl-test-1", djl.gate().gpu());
            assertSame(QgpuDjl.registry().gate("GPU-djl-test-1"), djl.gate(), "the process-wide gate of that GPU");
            assertEquals(IsolationPolicy.ELASTIC, djl.gate().config().policy(), "request guaranteed, limit enforced");
            assertEquals("ns/chat-1", djl.tenant().name());
            assertEquals(PriorityClass.ONLINE, djl.tenant().priority());
            assertEquals(20, djl.tenant().spec().requestPercent());
            assertEquals(40, djl.usage().limitNanos() * 100 / djl.usage().windowNanos(), "40% of the window");
            assertThrows(GateStateException.class, () -> QgpuDjl.fromEnvironment(env), "one tenant of a name per gate");
        }
        assertTrue(QgpuDjl.registry().gate("GPU-djl-test-1").tenants().isEmpty(), "close() unregistered it");
    }

    @Test
    void aBadEnvironmentRegistersNothing() {
        InvalidValueException e = assertThrows(InvalidValueException.class, () -> QgpuDjl.fromEnvironment(
                Map.of("QGPU_PRIORITY", "online", "QGPU_COMPUTE_LIMIT", "150", "NVIDIA_VISIBLE_DEVICES", "GPU-djl-test-2")));
        assertEquals("QGPU_COMPUTE_LIMIT", e.field());
        assertTrue(QgpuDjl.registry().gates().stream().noneMatch(g -> g.gpu().equals("GPU-djl-test-2")));
    }
}
