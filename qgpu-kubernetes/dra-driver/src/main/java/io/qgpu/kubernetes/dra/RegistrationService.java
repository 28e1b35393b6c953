package io.qgpu.kubernetes.dra;

import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import io.qgpu.kubernetes.dra.pluginregistration.InfoRequest;
import io.qgpu.kubernetes.dra.pluginregistration.PluginInfo;
import io.qgpu.kubernetes.dra.pluginregistration.RegistrationGrpc;
import io.qgpu.kubernetes.dra.pluginregistration.RegistrationStatus;
import io.qgpu.kubernetes.dra.pluginregistration.RegistrationStatusResponse;
import io.qgpu.kubernetes.node.dra.DraNames;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The kubelet's plugin watcher's side of registration ({@code pluginregistration.Registration}):
 * {@code GetInfo} answers type {@value DriverNames#PLUGIN_TYPE}, the driver name, the DRA socket's
 * absolute path and the services served there ({@value DriverNames#SERVICE_V1},
 * {@value DriverNames#SERVICE_V1BETA1}); {@code NotifyRegistrationStatus} records the kubelet's verdict
 * and, as the kubelet's own helper does, answers an error when the kubelet did not register the plugin.
 *
 * <p>Thread safety: thread-safe.
 */
final class RegistrationService extends RegistrationGrpc.RegistrationImplBase {
    private static final Logger LOG = LoggerFactory.getLogger(RegistrationService.class);

    private final Path endpoint;
    private final AtomicReference<RegistrationStatus> status = new AtomicReference<>();

    RegistrationService(Path endpoint) {
        this.endpoint = endpoint.toAbsolutePath();
    }

    /** The services offered on the endpoint, in the kubelet's names. */
    static List<String> supportedVersions() {
        return List.of(DriverNames.SERVICE_V1, DriverNames.SERVICE_V1BETA1);
    }

    /** The kubelet's last verdict, null before the first. */
    RegistrationStatus lastStatus() {
        return status.get();
    }

    @Override
    public void getInfo(InfoRequest request, StreamObserver<PluginInfo> out) {
        out.onNext(PluginInfo.newBuilder().setType(DriverNames.PLUGIN_TYPE).setName(DraNames.DRIVER)
                .setEndpoint(endpoint.toString()).addAllSupportedVersions(supportedVersions()).build());
        out.onCompleted();
    }

    @Override
    public void notifyRegistrationStatus(RegistrationStatus request, StreamObserver<RegistrationStatusResponse> out) {
        status.set(request);
        if (request.getPluginRegistered()) {
            LOG.info("the kubelet registered {} (endpoint {})", DraNames.DRIVER, endpoint);
            out.onNext(RegistrationStatusResponse.getDefaultInstance());
            out.onCompleted();
        } else {
            LOG.error("the kubelet did not register {}: {}", DraNames.DRIVER, request.getError());
            out.onError(Status.UNKNOWN.withDescription("failed registration process: " + request.getError()).asRuntimeException());
        }
    }
}
