package io.qgpu.kubernetes.deviceplugin;

import io.qgpu.kubernetes.node.UnixSockets;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.stub.StreamObserver;
import io.qgpu.kubernetes.deviceplugin.v1beta1.Empty;
import io.qgpu.kubernetes.deviceplugin.v1beta1.RegisterRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.RegistrationGrpc;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A kubelet for the tests: serves {@code Registration} on {@code kubelet.sock} in a directory, over a
 * real Unix socket, and records each request. {@link #restart()} does what a kubelet does when it
 * starts again: removes the sockets in the directory and creates {@code kubelet.sock} anew.
 */
final class FakeKubelet implements AutoCloseable {
    static final long TIMEOUT_SECONDS = 20;

    private final Path dir;
    private final UnixSockets sockets = UnixSockets.open("fake-kubelet");
    private final BlockingQueue<RegisterRequest> registrations = new LinkedBlockingQueue<>();
    private Server server;

    FakeKubelet(Path dir) {
        this.dir = dir;
    }

    FakeKubelet start() throws IOException {
        server = sockets.serve(dir.resolve(Names.KUBELET_SOCKET), List.of(new RegistrationGrpc.RegistrationImplBase() {
            @Override
            public void register(RegisterRequest request, StreamObserver<Empty> out) {
                registrations.add(request);
                out.onNext(Empty.getDefaultInstance());
                out.onCompleted();
            }
        }));
        return this;
    }

    /** Stops, removes every socket in the directory, and starts again on a new kubelet.sock. */
    void restart() throws IOException {
        UnixSockets.stop(server);
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, "*.sock")) {
            for (Path f : files) {
                Files.deleteIfExists(f);
            }
        }
        start();
    }

    /** The next registration, waiting for it. */
    RegisterRequest awaitRegistration() throws InterruptedException {
        RegisterRequest r = registrations.poll(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        assertNotNull(r, "no registration within " + TIMEOUT_SECONDS + " s");
        return r;
    }

    /** A channel to the plugin that registered with {@code r}. */
    ManagedChannel dial(RegisterRequest r) {
        return sockets.channel(dir.resolve(r.getEndpoint()));
    }

    @Override
    public void close() {
        if (server != null) {
            UnixSockets.stop(server);
        }
        sockets.close();
    }
}
