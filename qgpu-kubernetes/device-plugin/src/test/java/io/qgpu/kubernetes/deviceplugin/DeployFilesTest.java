package io.qgpu.kubernetes.deviceplugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.qgpu.kubernetes.node.mps.MpsControlDaemon;
import io.qgpu.kubernetes.node.mps.MpsDeployFile;
import io.qgpu.kubernetes.node.mps.MpsLayout;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Issue 38: the plugin's MPS control daemon DaemonSet ({@code deploy/mps-control-daemon.yaml}) parses as a DaemonSet
 * that runs the daemons apart from the plugin, with the host's PID namespace, the compute and utility driver
 * capabilities, privileges and the node's MPS shared-memory directory as its /dev/shm, each explained by the
 * comment above it; and the plugin's DaemonSet says what {@code --sharing mps} needs.
 */
@EnableKubernetesMockClient(crud = true)
class DeployFilesTest {
    static final Path DEPLOY = Path.of(System.getProperty("qgpu.deviceplugin.deploy", "deploy"));
    static KubernetesClient client;

    static List<HasMetadata> load(String file) throws Exception {
        try (InputStream in = Files.newInputStream(DEPLOY.resolve(file))) {
            return client.load(in).items();
        }
    }

    @Test
    void theMpsControlDaemonSetHasWhatTheDaemonsNeedEachExplained() throws Exception {
        List<HasMetadata> objects = load("mps-control-daemon.yaml");
        assertEquals(1, objects.size());
        DaemonSet ds = (DaemonSet) objects.get(0);
        var pod = ds.getSpec().getTemplate().getSpec();
        assertEquals(Boolean.TRUE, pod.getHostPID());
        assertEquals("OnDelete", ds.getSpec().getUpdateStrategy().getType());
        var c = pod.getContainers().get(0);
        assertEquals(List.of("java", "-cp", "/opt/qgpu/qgpu-device-plugin.jar", MpsControlDaemon.class.getName(),
                "--mps-root=/run/qgpu/mps", "--mps-shm-dir=/dev/shm", "--rules=qgpu"), c.getCommand());
        Map<String, String> env = new LinkedHashMap<>();
        c.getEnv().forEach(e -> env.put(e.getName(), e.getValue()));
        assertEquals("compute,utility", env.get("NVIDIA_DRIVER_CAPABILITIES"));
        assertEquals("all", env.get("NVIDIA_VISIBLE_DEVICES"));
        assertEquals(Boolean.TRUE, c.getSecurityContext().getPrivileged());
        Map<String, String> mounts = new LinkedHashMap<>();
        c.getVolumeMounts().forEach(m -> mounts.put(m.getMountPath(), m.getName()));
        Map<String, String> hostPaths = new LinkedHashMap<>();
        pod.getVolumes().forEach(v -> hostPaths.put(v.getName(), v.getHostPath().getPath()));
        assertEquals(new MpsLayout(Path.of("/run/qgpu/mps")).defaultShmDir().toString(), hostPaths.get(mounts.get("/dev/shm")),
                "the daemons' /dev/shm is the directory the plugin mounts into every client by default");
        assertEquals("/run/qgpu/mps", hostPaths.get(mounts.get("/run/qgpu/mps")));

        MpsDeployFile text = MpsDeployFile.read(DEPLOY.resolve("mps-control-daemon.yaml"));
        assertTrue(text.commentAbove("hostPID: true").contains("PID namespace"), text.commentAbove("hostPID: true"));
        String caps = text.commentAbove("- name: NVIDIA_DRIVER_CAPABILITIES");
        assertTrue(caps.contains("compute:") && caps.contains("nvidia-cuda-mps-control") && caps.contains("utility:"), caps);
        assertTrue(text.commentAbove("privileged: true").contains("root"), text.commentAbove("privileged: true"));
        String shm = text.commentAbove("- name: mps-shm");
        assertTrue(shm.contains("/dev/shm") && shm.contains("every client"), shm);
    }

    @Test
    void thePluginsDaemonSetSaysWhatMpsNeeds() throws Exception {
        DaemonSet ds = load("daemonset.yaml").stream().filter(DaemonSet.class::isInstance).map(DaemonSet.class::cast).findFirst()
                .orElseThrow();
        assertEquals(List.of("java", "-jar", "/opt/qgpu/qgpu-device-plugin.jar"),
                ds.getSpec().getTemplate().getSpec().getContainers().get(0).getCommand().subList(0, 3));
        String text = Files.readString(DEPLOY.resolve("daemonset.yaml"));
        assertTrue(text.contains("mps-control-daemon.yaml") && text.contains("--mps-daemons external, the default"), "the DaemonSet is named");
        MpsDeployFile lines = MpsDeployFile.read(DEPLOY.resolve("daemonset.yaml"));
        assertTrue(lines.commentAbove("securityContext:").contains("privileged: true"), lines.commentAbove("securityContext:"));
    }
}
