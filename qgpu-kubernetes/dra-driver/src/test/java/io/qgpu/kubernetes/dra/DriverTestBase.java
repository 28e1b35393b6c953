package io.qgpu.kubernetes.dra;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSlice;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.qgpu.kubernetes.dra.pluginregistration.PluginInfo;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;
import io.qgpu.kubernetes.node.FakeNvmlControl;

/**
 * The driver on the fake NVML library, against fabric8's mock API server in CRUD mode, driven by a
 * {@link Kubelet} on the real Unix sockets in a temporary directory; every test closes what it started,
 * and no NVML session may be left open.
 */
@EnableKubernetesMockClient(crud = true)
abstract class DriverTestBase {
    static final FakeNvmlControl FAKE = FakeNvmlControl.load();
    static final Duration RECOVER_AFTER = Duration.ofSeconds(60);
    static KubernetesMockServer server;
    static KubernetesClient client;

    @TempDir
    Path tmp;
    Path registrar;
    Path plugins;
    Path cdi;
    Path state;
    Kubelet kubelet;
    final AtomicLong clock = new AtomicLong(1_000_000_000L);
    final List<AutoCloseable> open = new ArrayList<>();

    @BeforeEach
    void directories() throws IOException {
        registrar = Files.createDirectories(tmp.resolve("plugins_registry"));
        plugins = Files.createDirectories(tmp.resolve("plugins"));
        cdi = tmp.resolve("cdi");
        state = tmp.resolve("state.json");
        kubelet = new Kubelet();
        client.resources(ResourceSlice.class).delete();
        client.resources(ResourceClaim.class).inAnyNamespace().delete();
    }

    @AfterEach
    void closeAll() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
        kubelet.close();
        FAKE.fake_nvml_clear_faults();
        assertEquals(0, FAKE.fake_nvml_init_count(), "a test left an NVML session open");
    }

    DriverConfig config(String machine) {
        return DriverConfig.defaults("node-a").withDirectories(registrar, plugins, cdi).withStateFile(state)
                .withNvml(Optional.of(FakeNvmlControl.path()), Optional.of(machine))
                .withRecovery(RECOVER_AFTER, Duration.ZERO, clock::get);
    }

    /** Starts the driver; it is closed after the test (or earlier by the test). */
    DraDriver start(String machine) throws IOException {
        DraDriver d = DraDriver.start(config(machine), client);
        open.add(d);
        return d;
    }

    /** Registers as the kubelet does. */
    PluginInfo register() {
        return kubelet.register(registrar);
    }

    List<ResourceSlice> slices() {
        return client.resources(ResourceSlice.class).list().getItems();
    }

    /** A kubeconfig file in the test's folder that points at the mock API server (what {@code --kubeconfig} reads). */
    Path writeKubeconfig() throws IOException {
        return Files.writeString(tmp.resolve("kubeconfig"), """
                apiVersion: v1
                kind: Config
                clusters:
                  - name: mock
                    cluster:
                      server: %s
                      insecure-skip-tls-verify: true
                users:
                  - name: driver
                    user:
                      token: t
                contexts:
                  - name: mock
                    context:
                      cluster: mock
                      user: driver
                current-context: mock
                """.formatted(client.getConfiguration().getMasterUrl()));
    }
}
