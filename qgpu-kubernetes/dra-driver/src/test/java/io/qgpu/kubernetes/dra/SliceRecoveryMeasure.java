package io.qgpu.kubernetes.dra;

import io.fabric8.kubernetes.api.model.resource.v1.Device;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSlice;
import io.qgpu.kubernetes.node.FakeNvmlControl;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A measurement, not a test: how long after the API server comes back the ResourceSlice is right again, with
 * the driver's default reconcile settings (a pass every 10 s; a failed step retried after 0.5 s doubling to 30 s)
 * and the system clock. For each outage length it takes the API server down, turns a GPU unhealthy (an Xid),
 * waits out the outage, brings the API server back and polls the API server every millisecond until the slice
 * no longer lists the GPU; then the GPU recovers and the slice is waited for again (API server up: the
 * change-triggered pass). Prints one line per round.
 *
 * <pre>
 * ./mvnw -B -q -pl qgpu-kubernetes/dra-driver -am test-compile
 * ./mvnw -B -q -pl qgpu-kubernetes/dra-driver exec:java -Dexec.classpathScope=test \
 *     -Dexec.mainClass=io.qgpu.kubernetes.dra.SliceRecoveryMeasure -Dexec.args="2 10 30" \
 *     -Dqgpu.fakeNvml.dir=qgpu-kubernetes/dra-driver/target/fake-nvml
 * </pre>
 * (two runs: {@code exec.args} would also reach the build's own {@code exec} step that compiles the fake NVML)
 * <pre>
 * </pre>
 */
public final class SliceRecoveryMeasure {
    private SliceRecoveryMeasure() {
    }

    public static void main(String[] args) throws Exception {
        List<Integer> outages = new ArrayList<>();
        for (String a : args.length == 0 ? new String[] {"2", "10", "30"} : args) {
            outages.add(Integer.parseInt(a));
        }
        FakeNvmlControl fake = FakeNvmlControl.load();
        Path tmp = Files.createTempDirectory("slice-recovery");
        Files.createDirectories(tmp.resolve("registry"));
        Files.createDirectories(tmp.resolve("plugins"));
        try (FaultyApiServer api = new FaultyApiServer()) {
            DriverConfig c = DriverConfig.defaults("node-a").withDirectories(tmp.resolve("registry"), tmp.resolve("plugins"),
                    tmp.resolve("cdi")).withStateFile(tmp.resolve("state.json"))
                    .withNvml(Optional.of(FakeNvmlControl.path()), Optional.of("t4x4"))
                    .withRecovery(Duration.ofMillis(1), Duration.ZERO, System::nanoTime)
                    .withReconcile(io.qgpu.kubernetes.node.reconcile.NodeReconciler.Settings.defaults(), Duration.ZERO);
            try (DraDriver d = DraDriver.start(c, api.client())) {
                for (int outage : outages) {
                    api.down();
                    fake.fake_nvml_inject_xid(2, 48);
                    Thread.sleep(outage * 1000L);
                    long up = System.nanoTime();
                    api.up();
                    long right = await(api, false);
                    System.out.printf("outage %3d s: slice right %6.0f ms after the API server's return%n", outage,
                            (right - up) / 1e6);
                    Thread.sleep(5);
                    long back = System.nanoTime();
                    d.health().recoverDue();
                    long republished = await(api, true);
                    System.out.printf("              GPU back: slice right %6.1f ms after the health change (API server up)%n",
                            (republished - back) / 1e6);
                }
            }
        } finally {
            fake.fake_nvml_clear_faults();
        }
    }

    /** Polls until gpu-2 is (or is not) in the published slice; the time it was seen so. */
    private static long await(FaultyApiServer api, boolean listed) throws InterruptedException {
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (System.nanoTime() < deadline) {
            ResourceSlice s = api.client().resources(ResourceSlice.class).withName("node-a-gpu.qgpu.io").get();
            if (s != null && s.getSpec().getDevices().stream().map(Device::getName).toList().contains("gpu-2") == listed) {
                return System.nanoTime();
            }
            Thread.sleep(1);
        }
        throw new IllegalStateException("the slice was not right within 120 s");
    }
}
