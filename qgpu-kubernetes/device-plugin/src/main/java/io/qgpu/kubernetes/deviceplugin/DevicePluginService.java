package io.qgpu.kubernetes.deviceplugin;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.qgpu.api.Health;
import io.qgpu.kubernetes.deviceplugin.v1beta1.AllocateRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.AllocateResponse;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ContainerAllocateRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ContainerPreferredAllocationRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ContainerPreferredAllocationResponse;
import io.qgpu.kubernetes.deviceplugin.v1beta1.Device;
import io.qgpu.kubernetes.deviceplugin.v1beta1.DevicePluginGrpc;
import io.qgpu.kubernetes.deviceplugin.v1beta1.DevicePluginOptions;
import io.qgpu.kubernetes.deviceplugin.v1beta1.Empty;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ListAndWatchResponse;
import io.qgpu.kubernetes.deviceplugin.v1beta1.NUMANode;
import io.qgpu.kubernetes.deviceplugin.v1beta1.PreStartContainerRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.PreStartContainerResponse;
import io.qgpu.kubernetes.deviceplugin.v1beta1.PreferredAllocationRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.PreferredAllocationResponse;
import io.qgpu.kubernetes.deviceplugin.v1beta1.TopologyInfo;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code DevicePlugin} gRPC service over a {@link VirtualDevicePool}. Every refusal is a gRPC
 * status with a message naming the field and the value ({@link PluginException}); anything
 * unexpected is answered {@code INTERNAL}. No request can stop the plugin.
 *
 * <p>{@code Allocate} computes each container's answer inside the pool's transaction
 * ({@link VirtualDevicePool#allocate(List, VirtualDevicePool.Answer)}), so an answer the sharing back end refuses,
 * or a host directory that cannot be created, takes the whole call back; after every {@code Allocate}, answered
 * or refused, it calls {@code afterAllocate} (the plugin triggers its reconciler there). {@code ListAndWatch}
 * subscribes to the pool's device list until the kubelet cancels the stream.
 *
 * <p>Thread safety: thread-safe (the pool serialises).
 */
public final class DevicePluginService extends DevicePluginGrpc.DevicePluginImplBase {
    private static final Logger LOG = LoggerFactory.getLogger(DevicePluginService.class);

    /** The options the plugin registers with: no PreStartContainer needed; GetPreferredAllocation offered. */
    public static final DevicePluginOptions OPTIONS = DevicePluginOptions.newBuilder()
            .setPreStartRequired(false).setGetPreferredAllocationAvailable(true).build();

    private final VirtualDevicePool pool;
    private final ContainerEnvironment environment;
    private final Runnable afterAllocate;

    /** A service that does nothing after an {@code Allocate}. */
    public DevicePluginService(VirtualDevicePool pool, ContainerEnvironment environment) {
        this(pool, environment, () -> { });
    }

    /**
     * @param afterAllocate called after every {@code Allocate}, answered or refused; must not block
     */
    public DevicePluginService(VirtualDevicePool pool, ContainerEnvironment environment, Runnable afterAllocate) {
        this.pool = pool;
        this.environment = environment;
        this.afterAllocate = java.util.Objects.requireNonNull(afterAllocate, "afterAllocate");
    }

    @Override
    public void getDevicePluginOptions(Empty request, StreamObserver<DevicePluginOptions> out) {
        answer(out, () -> OPTIONS);
    }

    @Override
    public void listAndWatch(Empty request, StreamObserver<ListAndWatchResponse> out) {
        ServerCallStreamObserver<ListAndWatchResponse> stream = (ServerCallStreamObserver<ListAndWatchResponse>) out;
        AtomicReference<AutoCloseable> handle = new AtomicReference<>();
        stream.setOnCancelHandler(() -> unsubscribe(handle));
        // the pool calls its listeners one at a time under its lock: no further ordering needed here
        AutoCloseable h = pool.subscribe(devices -> {
            if (stream.isCancelled()) {
                unsubscribe(handle);   // the kubelet went away: nothing more to send
                return;
            }
            stream.onNext(list(devices));
        });
        if (!handle.compareAndSet(null, h)) {
            try {
                h.close();
            } catch (Exception e) {
                LOG.debug("closing a ListAndWatch subscription failed", e);
            }
        }
    }

    /** Closes the subscription in {@code handle}, or makes sure it is closed once it is set. */
    private static void unsubscribe(AtomicReference<AutoCloseable> handle) {
        try {
            AutoCloseable h = handle.getAndSet(() -> { });
            if (h != null) {
                h.close();
            }
        } catch (Exception e) {
            LOG.debug("closing a ListAndWatch subscription failed", e);
        }
    }

    @Override
    public void getPreferredAllocation(PreferredAllocationRequest request, StreamObserver<PreferredAllocationResponse> out) {
        answer(out, () -> {
            if (request.getContainerRequestsCount() == 0) {
                throw PluginException.invalid("PreferredAllocationRequest.container_requests", "[]",
                        "must name at least one container");
            }
            PreferredAllocationResponse.Builder r = PreferredAllocationResponse.newBuilder();
            for (int i = 0; i < request.getContainerRequestsCount(); i++) {
                ContainerPreferredAllocationRequest c = request.getContainerRequests(i);
                r.addContainerResponses(ContainerPreferredAllocationResponse.newBuilder().addAllDeviceIDs(
                        pool.preferred("PreferredAllocationRequest.container_requests[" + i + "]",
                                c.getAvailableDeviceIDsList(), c.getMustIncludeDeviceIDsList(), c.getAllocationSize())));
            }
            return r.build();
        });
    }

    @Override
    public void allocate(AllocateRequest request, StreamObserver<AllocateResponse> out) {
        answer(out, () -> {
            List<List<String>> containers = new ArrayList<>();
            for (ContainerAllocateRequest c : request.getContainerRequestsList()) {
                containers.add(List.copyOf(c.getDevicesIdsList()));
            }
            AllocateResponse.Builder r = AllocateResponse.newBuilder();
            // the answers are computed within the allocation's transaction: one the sharing back end refuses,
            // or whose host directories cannot be created, takes it all back, directories included
            try {
                pool.allocate(containers, (a, tx) -> r.addContainerResponses(environment.response(a, tx)));
            } finally {
                afterAllocate.run();
            }
            return r.build();
        });
    }

    @Override
    public void preStartContainer(PreStartContainerRequest request, StreamObserver<PreStartContainerResponse> out) {
        answer(out, () -> {
            pool.checkKnown("PreStartContainerRequest.devices_ids", request.getDevicesIdsList());
            return PreStartContainerResponse.getDefaultInstance();
        });
    }

    /** The wire form of the device list; the topology is left out where the NUMA node is unknown. */
    static ListAndWatchResponse list(List<VirtualDevice> devices) {
        ListAndWatchResponse.Builder r = ListAndWatchResponse.newBuilder();
        for (VirtualDevice d : devices) {
            Device.Builder b = Device.newBuilder().setID(d.id())
                    .setHealth(d.health() == Health.HEALTHY ? "Healthy" : "Unhealthy");
            d.numa().ifPresent(n -> b.setTopology(TopologyInfo.newBuilder().addNodes(NUMANode.newBuilder().setID(n))));
            r.addDevices(b);
        }
        return r.build();
    }

    private static <T> void answer(StreamObserver<T> out, Supplier<T> call) {
        T reply;
        try {
            reply = call.get();
        } catch (PluginException e) {
            LOG.warn("refused: {}", e.getMessage());
            out.onError(e.toStatus().asRuntimeException());
            return;
        } catch (StatusRuntimeException e) {
            out.onError(e);
            return;
        } catch (RuntimeException e) {
            LOG.error("request failed", e);
            out.onError(Status.INTERNAL.withDescription(String.valueOf(e.getMessage())).withCause(e).asRuntimeException());
            return;
        }
        out.onNext(reply);
        out.onCompleted();
    }
}
