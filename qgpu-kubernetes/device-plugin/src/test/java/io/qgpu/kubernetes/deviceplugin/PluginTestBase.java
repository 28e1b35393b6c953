package io.qgpu.kubernetes.deviceplugin;

import io.qgpu.kubernetes.node.UnixSockets;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.grpc.ManagedChannel;
import io.qgpu.kubernetes.deviceplugin.v1beta1.DevicePluginGrpc;
import io.qgpu.kubernetes.deviceplugin.v1beta1.RegisterRequest;
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
 * A fake kubelet on a real Unix socket in a temporary directory and the plugin on the fake NVML
 * library; every test closes what it started, and no NVML session may be left open.
 */
abstract class PluginTestBase {
    static final FakeNvmlControl FAKE = FakeNvmlControl.load();
    static final Duration RECOVER_AFTER = Duration.ofSeconds(60);

    @TempDir
    Path tmp;
    Path dir;
    Path state;
    FakeKubelet kubelet;
    final AtomicLong clock = new AtomicLong(1_000_000_000L);
    final List<AutoCloseable> open = new ArrayList<>();

    @BeforeEach
    void kubeletUp() throws IOException {
        dir = Files.createDirectories(tmp.resolve("device-plugins"));
        state = tmp.resolve("state.json");
        kubelet = new FakeKubelet(dir).start();
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

    PluginConfig config(String machine, PodDecisions decisions) {
        return PluginConfig.defaults(dir)
                .withNvml(Optional.of(FakeNvmlControl.path()), Optional.of(machine))
                .withNode("node-a")
                .withStateFile(state)
                .withRecovery(RECOVER_AFTER, Duration.ZERO, clock::get)
                .withReconcileEvery(Duration.ZERO)   // deterministic: the tests call reconciler().reconcile()
                .withDecisions(decisions);
    }

    /** Starts the plugin; it is closed after the test (or earlier by the test). */
    DevicePlugin start(String machine) throws IOException {
        return start(config(machine, PodDecisions.none()));
    }

    DevicePlugin start(PluginConfig c) throws IOException {
        DevicePlugin p = DevicePlugin.start(c);
        open.add(p);
        return p;
    }

    /** A channel to the plugin that registered with {@code r}, closed after the test. */
    ManagedChannel dial(RegisterRequest r) {
        ManagedChannel ch = kubelet.dial(r);
        open.add(() -> UnixSockets.stop(ch));
        return ch;
    }

    DevicePluginGrpc.DevicePluginBlockingStub stub(RegisterRequest r) {
        return DevicePluginGrpc.newBlockingStub(dial(r));
    }
}
