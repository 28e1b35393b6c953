package io.qgpu.kubernetes.dra;

import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.qgpu.kubernetes.dra.pluginregistration.InfoRequest;
import io.qgpu.kubernetes.dra.pluginregistration.PluginInfo;
import io.qgpu.kubernetes.dra.pluginregistration.RegistrationGrpc;
import io.qgpu.kubernetes.dra.pluginregistration.RegistrationStatus;
import io.qgpu.kubernetes.dra.v1.Claim;
import io.qgpu.kubernetes.dra.v1.DRAPluginGrpc;
import io.qgpu.kubernetes.dra.v1.NodePrepareResourcesRequest;
import io.qgpu.kubernetes.dra.v1.NodePrepareResourcesResponse;
import io.qgpu.kubernetes.dra.v1.NodeUnprepareResourcesRequest;
import io.qgpu.kubernetes.dra.v1.NodeUnprepareResourcesResponse;
import io.qgpu.kubernetes.node.UnixSockets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The kubelet's side for the tests, over the real Unix sockets: the plugin watcher's {@code GetInfo} and
 * {@code NotifyRegistrationStatus} on the registration socket, then the DRA services on the endpoint
 * {@code GetInfo} named.
 */
final class Kubelet implements AutoCloseable {
    static final long DEADLINE_SECONDS = 20;

    private final UnixSockets sockets = UnixSockets.open("test-kubelet");
    private final List<ManagedChannel> channels = new ArrayList<>();

    ManagedChannel dial(Path socket) {
        ManagedChannel ch = sockets.channel(socket);
        channels.add(ch);
        return ch;
    }

    RegistrationGrpc.RegistrationBlockingStub registration(Path registrarDir) {
        return RegistrationGrpc.newBlockingStub(dial(registrarDir.resolve(DriverNames.REGISTRATION_SOCKET)))
                .withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS);
    }

    /** Registers as the plugin watcher does and returns what GetInfo said. */
    PluginInfo register(Path registrarDir) {
        RegistrationGrpc.RegistrationBlockingStub r = registration(registrarDir);
        PluginInfo info = r.getInfo(InfoRequest.getDefaultInstance());
        r.notifyRegistrationStatus(RegistrationStatus.newBuilder().setPluginRegistered(true).build());
        return info;
    }

    /**
     * GetInfo on a channel of its own, stopped after: a readiness probe for a driver that is starting, which a
     * refused connection (no socket yet, or a stale one) does not slow down with gRPC's reconnect back-off.
     *
     * @return what GetInfo said; empty when nothing answered within {@code seconds}
     */
    Optional<PluginInfo> probe(Path registrarDir, long seconds) {
        ManagedChannel ch = sockets.channel(registrarDir.resolve(DriverNames.REGISTRATION_SOCKET));
        try {
            return Optional.of(RegistrationGrpc.newBlockingStub(ch).withDeadlineAfter(seconds, TimeUnit.SECONDS)
                    .getInfo(InfoRequest.getDefaultInstance()));
        } catch (StatusRuntimeException e) {
            return Optional.empty();
        } finally {
            UnixSockets.stop(ch);
        }
    }

    DRAPluginGrpc.DRAPluginBlockingStub v1(PluginInfo info) {
        return DRAPluginGrpc.newBlockingStub(dial(Path.of(info.getEndpoint()))).withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS);
    }

    io.qgpu.kubernetes.dra.v1beta1.DRAPluginGrpc.DRAPluginBlockingStub v1beta1(PluginInfo info) {
        return io.qgpu.kubernetes.dra.v1beta1.DRAPluginGrpc.newBlockingStub(dial(Path.of(info.getEndpoint())))
                .withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS);
    }

    static Claim claim(String namespace, String name, String uid) {
        return Claim.newBuilder().setNamespace(namespace).setName(name).setUid(uid).build();
    }

    static NodePrepareResourcesResponse prepare(DRAPluginGrpc.DRAPluginBlockingStub stub, Claim... claims) {
        return stub.nodePrepareResources(NodePrepareResourcesRequest.newBuilder().addAllClaims(List.of(claims)).build());
    }

    static NodeUnprepareResourcesResponse unprepare(DRAPluginGrpc.DRAPluginBlockingStub stub, Claim... claims) {
        return stub.nodeUnprepareResources(NodeUnprepareResourcesRequest.newBuilder().addAllClaims(List.of(claims)).build());
    }

    @Override
    public void close() {
        channels.forEach(UnixSockets::stop);
        sockets.close();
    }
}
