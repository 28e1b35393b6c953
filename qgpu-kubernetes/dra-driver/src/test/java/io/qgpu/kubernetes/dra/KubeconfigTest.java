package io.qgpu.kubernetes.dra;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.fabric8.kubernetes.api.model.resource.v1.ResourceSlice;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Item 1: {@code --kubeconfig FILE} is the API server the driver talks to. */
class KubeconfigTest extends DriverTestBase {

    @Test
    void theClientOfAKubeconfigFileReachesItsServer() throws Exception {
        start("t4x4");
        Path kubeconfig = writeKubeconfig();
        try (KubernetesClient fromFile = io.qgpu.kubernetes.node.AgentClients.client(Optional.of(kubeconfig))) {
            assertEquals("node-a-gpu.qgpu.io",
                    fromFile.resources(ResourceSlice.class).withName("node-a-gpu.qgpu.io").get().getMetadata().getName());
        }
    }
}
