package io.qgpu.kubernetes.deviceplugin;

import io.qgpu.kubernetes.node.UnixSockets;
import io.grpc.ManagedChannel;
import io.qgpu.kubernetes.deviceplugin.v1beta1.AllocateRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ContainerAllocateRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ContainerAllocateResponse;
import io.qgpu.kubernetes.deviceplugin.v1beta1.Device;
import io.qgpu.kubernetes.deviceplugin.v1beta1.DevicePluginGrpc;
import io.qgpu.kubernetes.deviceplugin.v1beta1.DeviceSpec;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ListAndWatchResponse;
import io.qgpu.kubernetes.deviceplugin.v1beta1.RegisterRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The device plugin on a real GPU machine: the system's libnvidia-ml, a fake kubelet on a real Unix socket
 * in a temporary directory. Not a unit test (CI has no GPU); {@code qgpu-kubernetes/device-plugin/check-real-gpu.sh}
 * runs it where a GPU is. It checks that the plugin registers, lists healthy virtual devices for every GPU
 * NVML sees, and answers {@code Allocate} for one of them with that GPU's UUID and device nodes that exist
 * on this machine; then that it closes. Prints one line per check; exit code 0 when all pass, 1 otherwise.
 */
public final class RealGpuPluginCheck {

    private RealGpuPluginCheck() {
    }

    public static void main(String[] args) throws Exception {
        List<String> failures = new ArrayList<>();
        Path tmp = Files.createTempDirectory("qgpu-plugin-check");
        Path dir = Files.createDirectories(tmp.resolve("device-plugins"));
        try (FakeKubelet kubelet = new FakeKubelet(dir).start()) {
            DevicePlugin plugin = DevicePlugin.start(PluginConfig.defaults(dir).withNode("real-gpu")
                    .withStateFile(tmp.resolve("state.json")));
            try {
                RegisterRequest r = kubelet.awaitRegistration();
                System.out.printf("registered: resource %s, endpoint %s, version %s%n", r.getResourceName(),
                        r.getEndpoint(), r.getVersion());
                ManagedChannel ch = kubelet.dial(r);
                try {
                    ListAndWatchResponse list = new DeviceStream(ch).first();
                    List<String> gpus = plugin.pool().devices().stream().map(VirtualDevice::gpu).distinct().toList();
                    long healthy = list.getDevicesList().stream().filter(d -> d.getHealth().equals("Healthy")).count();
                    System.out.printf("ListAndWatch: %d devices (%d healthy) on %d GPU(s) %s%n",
                            list.getDevicesCount(), healthy, gpus.size(), gpus);
                    check(failures, !gpus.isEmpty(), "at least one GPU in the pool");
                    check(failures, list.getDevicesCount() > 0 && healthy == list.getDevicesCount(),
                            "every listed device healthy");
                    Device first = list.getDevices(0);
                    System.out.printf("first device %s, NUMA nodes %s%n", first.getID(),
                            first.hasTopology() ? first.getTopology().getNodesList().stream().map(n -> n.getID()).toList() : "none");
                    ContainerAllocateResponse a = DevicePluginGrpc.newBlockingStub(ch).allocate(AllocateRequest.newBuilder()
                            .addContainerRequests(ContainerAllocateRequest.newBuilder().addDevicesIds(first.getID()))
                            .build()).getContainerResponses(0);
                    System.out.printf("Allocate: envs %s%n", a.getEnvsMap());
                    String gpu = plugin.pool().devices().stream().filter(v -> v.id().equals(first.getID()))
                            .findFirst().orElseThrow().gpu();
                    check(failures, gpu.equals(a.getEnvsOrDefault("NVIDIA_VISIBLE_DEVICES", "")),
                            "NVIDIA_VISIBLE_DEVICES is the device's GPU " + gpu);
                    for (DeviceSpec s : a.getDevicesList()) {
                        boolean exists = Files.exists(Path.of(s.getHostPath()));
                        System.out.printf("device node %s %s%n", s.getHostPath(), exists ? "exists" : "MISSING");
                        check(failures, exists, "device node " + s.getHostPath() + " exists on this machine");
                    }
                    check(failures, a.getDevicesCount() > 0, "Allocate names device nodes");
                } finally {
                    UnixSockets.stop(ch);
                }
            } finally {
                plugin.close();
            }
        }
        for (String f : failures) {
            System.out.println("FAIL " + f);
        }
        System.out.println(failures.isEmpty() ? "plugin check: all passed" : "plugin check: " + failures.size() + " failed");
        System.exit(failures.isEmpty() ? 0 : 1);
    }

    private static void check(List<String> failures, boolean ok, String what) {
        System.out.println((ok ? "ok   " : "FAIL ") + what);
        if (!ok) {
            failures.add(what);
        }
    }
}
