package io.qgpu.kubernetes.dra;

import io.fabric8.kubernetes.api.model.resource.v1.Device;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSlice;
import io.qgpu.kubernetes.node.FakeNvmlControl;
import io.qgpu.kubernetes.node.FaultyApiServer;
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
 * waits out the outage (the one wait on real time: the outage's length is what the back-off is measured against),
 * brings the API server back and watches the slice until it no longer lists the GPU; then the GPU recovers and the slice is waited for again (API server up: the
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
    private static final String SLICE = "node-a-gpu.qgpu.io";

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
                    Thread.sleep(outage * 1000L);   // the outage itself: its length in real time is what is measured against
                    long up = System.nanoTime();
                    api.up();
                    long right = await(api, false);
                    System.out.printf("outage %3d s: slice right %6.0f ms after the API server's return%n", outage,
                            (right - up) / 1e6);
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

    /**
     * Waits until gpu-2 is (or is not) in the published slice: a watch on the slice, opened first, then one read (the
     * slice may be right already); the time it was seen so.
     */
    private static long await(FaultyApiServer api, boolean listed) throws Exception {
        java.util.concurrent.CompletableFuture<Long> seen = new java.util.concurrent.CompletableFuture<>();
        java.util.function.Predicate<ResourceSlice> right = s -> s != null
                && s.getSpec().getDevices().stream().map(Device::getName).toList().contains("gpu-2") == listed;
        try (io.fabric8.kubernetes.client.Watch w = api.client().resources(ResourceSlice.class).withName(SLICE)
                .watch(new io.fabric8.kubernetes.client.Watcher<ResourceSlice>() {
                    @Override
                    public void eventReceived(Action action, ResourceSlice s) {
                        if (right.test(s)) {
                            seen.complete(System.nanoTime());
                        }
                    }

                    @Override
                    public void onClose(io.fabric8.kubernetes.client.WatcherException cause) {
                        seen.completeExceptionally(cause);
                    }
                })) {
            if (right.test(api.client().resources(ResourceSlice.class).withName(SLICE).get())) {
                seen.complete(System.nanoTime());
            }
            return seen.get(120, java.util.concurrent.TimeUnit.SECONDS);
        }
    }
}
