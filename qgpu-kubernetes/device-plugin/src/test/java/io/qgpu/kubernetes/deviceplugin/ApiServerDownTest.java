package io.qgpu.kubernetes.deviceplugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.grpc.Status;
import java.io.IOException;
import java.net.ServerSocket;
import org.junit.jupiter.api.Test;

/** An API server that cannot be reached is answered UNAVAILABLE, naming the node. */
class ApiServerDownTest {

    @Test
    void anUnreachableApiServerIsUnavailable() throws IOException {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort(); // closed again: nothing listens there
        }
        try (KubernetesClient client = new KubernetesClientBuilder().withConfig(new ConfigBuilder()
                .withMasterUrl("http://127.0.0.1:" + port).withRequestRetryBackoffLimit(0)
                .withConnectionTimeout(2_000).withRequestTimeout(2_000).build()).build()) {
            PluginException e = assertThrows(PluginException.class,
                    () -> new KubernetesPodDecisions(client, "node-a").pending(1));
            assertEquals(Status.Code.UNAVAILABLE, e.code());
            assertTrue(e.getMessage().startsWith("cannot list the pods of node node-a"), e.getMessage());
        }
    }
}
