package io.qgpu.samples.localcluster;

import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.stub.StreamObserver;
import io.qgpu.kubernetes.deviceplugin.v1beta1.AllocateRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.AllocateResponse;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ContainerAllocateRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ContainerPreferredAllocationRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.DevicePluginGrpc;
import io.qgpu.kubernetes.deviceplugin.v1beta1.Empty;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ListAndWatchResponse;
import io.qgpu.kubernetes.deviceplugin.v1beta1.PreferredAllocationRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.RegisterRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.RegistrationGrpc;
import io.qgpu.kubernetes.dra.DriverNames;
import io.qgpu.kubernetes.dra.pluginregistration.InfoRequest;
import io.qgpu.kubernetes.dra.pluginregistration.PluginInfo;
import io.qgpu.kubernetes.dra.pluginregistration.RegistrationStatus;
import io.qgpu.kubernetes.dra.v1.Claim;
import io.qgpu.kubernetes.dra.v1.DRAPluginGrpc;
import io.qgpu.kubernetes.dra.v1.NodePrepareResourcesRequest;
import io.qgpu.kubernetes.dra.v1.NodePrepareResourcesResponse;
import io.qgpu.kubernetes.dra.v1.NodeUnprepareResourcesRequest;
import io.qgpu.kubernetes.dra.v1.NodeUnprepareResourcesResponse;
import io.qgpu.kubernetes.node.UnixSockets;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The kubelet's side of both node agents, over the real Unix sockets, as the kubelet drives them:
 *
 * <ul>
 *   <li>device plugins: serves {@code Registration} on {@code kubelet.sock} in the device-plugin directory, then
 *       dials the plugin's endpoint for {@code ListAndWatch}, {@code GetPreferredAllocation} and {@code Allocate};</li>
 *   <li>DRA: the plugin watcher's {@code GetInfo} and {@code NotifyRegistrationStatus} on the driver's registration
 *       socket, then {@code NodePrepareResources} and {@code NodeUnprepareResources} on the endpoint it named.</li>
 * </ul>
 *
 * <p>It runs no containers: what it prints is what the container runtime would be handed. Thread safety: the
 * registration queue is thread-safe; the calls are meant for one thread.
 */
public final class StandInKubelet implements AutoCloseable {
    /** Deadline of each call, seconds. */
    public static final long DEADLINE_SECONDS = 20;

    private final Path devicePluginDir;
    private final UnixSockets sockets = UnixSockets.open("local-kubelet");
    private final BlockingQueue<RegisterRequest> registrations = new LinkedBlockingQueue<>();
    private final List<ManagedChannel> channels = new ArrayList<>();
    private Server registrationServer;

    private StandInKubelet(Path devicePluginDir) {
        this.devicePluginDir = devicePluginDir;
    }

    /** Serves {@code Registration} on {@code DIR/kubelet.sock}, before any device plugin starts. */
    public static StandInKubelet start(Path devicePluginDir) throws IOException {
        StandInKubelet k = new StandInKubelet(devicePluginDir);
        k.registrationServer = k.sockets.serve(devicePluginDir.resolve("kubelet.sock"), List.of(new RegistrationGrpc.RegistrationImplBase() {
            @Override
            public void register(RegisterRequest request, StreamObserver<Empty> out) {
                k.registrations.add(request);
                out.onNext(Empty.getDefaultInstance());
                out.onCompleted();
            }
        }));
        return k;
    }

    /** The kubelet.sock this kubelet serves. */
    public Path kubeletSocket() {
        return devicePluginDir.resolve("kubelet.sock");
    }

    // ---------------------------------------------------------------- device plugins

    /** The next device plugin that registered (waits up to {@link #DEADLINE_SECONDS}). */
    public RegisterRequest awaitDevicePlugin() throws InterruptedException {
        RegisterRequest r = registrations.poll(DEADLINE_SECONDS, TimeUnit.SECONDS);
        if (r == null) {
            throw new IllegalStateException("no device plugin registered on " + kubeletSocket() + " within " + DEADLINE_SECONDS + " s");
        }
        return r;
    }

    /** The plugin's service, on the endpoint it registered with. */
    public DevicePluginGrpc.DevicePluginBlockingStub devicePlugin(RegisterRequest r) {
        return DevicePluginGrpc.newBlockingStub(dial(devicePluginDir.resolve(r.getEndpoint())));
    }

    /** The first list {@code ListAndWatch} sends (the kubelet keeps the stream open; this one reads once and cancels it). */
    public ListAndWatchResponse listDevices(DevicePluginGrpc.DevicePluginBlockingStub plugin) {
        Context.CancellableContext stream = Context.current().withCancellation();
        try {
            return stream.call(() -> plugin.withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS)
                    .listAndWatch(Empty.getDefaultInstance()).next());
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException("ListAndWatch: " + e.getMessage(), e);
        } finally {
            stream.cancel(null);
        }
    }

    /** {@code GetPreferredAllocation} for one container, then {@code Allocate} of what it preferred. */
    public AllocateResponse allocate(DevicePluginGrpc.DevicePluginBlockingStub plugin, List<String> available, int count) {
        DevicePluginGrpc.DevicePluginBlockingStub s = plugin.withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS);
        List<String> preferred = s.getPreferredAllocation(PreferredAllocationRequest.newBuilder()
                .addContainerRequests(ContainerPreferredAllocationRequest.newBuilder().addAllAvailableDeviceIDs(available)
                        .setAllocationSize(count))
                .build()).getContainerResponses(0).getDeviceIDsList();
        List<String> ids = preferred.size() == count ? preferred : available.subList(0, count);
        return plugin.withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS).allocate(AllocateRequest.newBuilder()
                .addContainerRequests(ContainerAllocateRequest.newBuilder().addAllDevicesIds(ids)).build());
    }

    // ---------------------------------------------------------------- DRA

    /** Registers the DRA driver whose registration socket is in {@code registrarDir}, as the plugin watcher does. */
    public PluginInfo registerDraDriver(Path registrarDir) {
        io.qgpu.kubernetes.dra.pluginregistration.RegistrationGrpc.RegistrationBlockingStub r =
                io.qgpu.kubernetes.dra.pluginregistration.RegistrationGrpc.newBlockingStub(
                                dial(registrarDir.resolve(DriverNames.REGISTRATION_SOCKET)))
                        .withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS);
        PluginInfo info = r.getInfo(InfoRequest.getDefaultInstance());
        r.notifyRegistrationStatus(RegistrationStatus.newBuilder().setPluginRegistered(true).build());
        return info;
    }

    /** {@code NodePrepareResources} (v1) of one claim. */
    public NodePrepareResourcesResponse prepare(PluginInfo driver, String namespace, String name, String uid) {
        return dra(driver).nodePrepareResources(NodePrepareResourcesRequest.newBuilder()
                .addClaims(Claim.newBuilder().setNamespace(namespace).setName(name).setUid(uid)).build());
    }

    /** {@code NodeUnprepareResources} (v1) of one claim. */
    public NodeUnprepareResourcesResponse unprepare(PluginInfo driver, String namespace, String name, String uid) {
        return dra(driver).nodeUnprepareResources(NodeUnprepareResourcesRequest.newBuilder()
                .addClaims(Claim.newBuilder().setNamespace(namespace).setName(name).setUid(uid)).build());
    }

    private DRAPluginGrpc.DRAPluginBlockingStub dra(PluginInfo driver) {
        return DRAPluginGrpc.newBlockingStub(dial(Path.of(driver.getEndpoint()))).withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS);
    }

    private synchronized ManagedChannel dial(Path socket) {
        ManagedChannel ch = sockets.channel(socket);
        channels.add(ch);
        return ch;
    }

    @Override
    public synchronized void close() {
        channels.forEach(UnixSockets::stop);
        channels.clear();
        if (registrationServer != null) {
            UnixSockets.stop(registrationServer);
        }
        sockets.close();
    }
}
