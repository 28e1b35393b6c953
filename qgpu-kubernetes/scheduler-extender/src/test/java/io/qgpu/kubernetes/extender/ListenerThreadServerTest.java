package io.qgpu.kubernetes.extender;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.InvalidValueException;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementConfig;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/**
 * {@code threads(0)}: every request is handled on the one thread that accepts the connections. The verbs answer as
 * with a pool, a bad body still gets its 4xx, the handling thread is the listener's (no pool thread
 * exists), and stopping needs no pool. A negative count is refused by name.
 */
class ListenerThreadServerTest {

    @Test
    void requestsAreServedOnTheListenerThread() throws Exception {
        Ledger ledger = Ledger.create(TestSupport.inventory().rules(), TestSupport.inventory().nodes());
        GpuExtender real = new GpuExtender(ledger, PlacementConfig.defaults(), new DemoCluster());
        Set<String> handledOn = ConcurrentHashMap.newKeySet();
        Extender recording = TestSupport.recordingFilterThreads(real, handledOn);
        ExtenderServer server = ExtenderServer.builder(recording)
                .host("127.0.0.1").port(0).urlPrefix("/qgpu").threads(0).build().start();
        try {
            HttpResponse<String> ok = TestSupport.post(server.baseUrl() + "/filter", TestSupport.payload("filter-names-infer.json"));
            assertEquals(200, ok.statusCode(), ok.body());
            assertTrue(TestSupport.tree(ok.body()).has("NodeNames"), ok.body());
            HttpResponse<String> bad = TestSupport.post(server.baseUrl() + "/filter", "{\"Pod\":".getBytes(StandardCharsets.UTF_8));
            assertEquals(400, bad.statusCode(), bad.body());
            assertEquals(Set.of("qgpu-extender-listener"), handledOn, "the one thread that accepts the connection handles the exchange");
        } finally {
            server.stop();
        }
    }

    @Test
    void aNegativeThreadCountIsRefusedByName() {
        InvalidValueException e = assertThrows(InvalidValueException.class,
                () -> ExtenderServer.builder(new GpuExtender(Ledger.create(TestSupport.inventory().rules(), TestSupport.inventory().nodes()),
                        PlacementConfig.defaults(), new DemoCluster())).threads(-1));
        assertTrue(e.getMessage().contains("server.threads") && e.getMessage().contains("-1"), e.getMessage());
    }
}
