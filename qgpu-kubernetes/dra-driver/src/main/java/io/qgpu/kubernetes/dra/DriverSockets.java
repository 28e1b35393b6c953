package io.qgpu.kubernetes.dra;

import io.grpc.BindableService;
import io.grpc.Server;
import io.qgpu.kubernetes.node.UnixSockets;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The driver's two sockets, in the order the kubelet's own helper uses: first the DRA services on
 * {@code pluginsDir/gpu.qgpu.io/dra.sock}, then the registration service on
 * {@code registrarDir/gpu.qgpu.io-reg.sock}, where the kubelet's plugin watcher finds it. A socket file
 * left by a killed process is removed before serving; both files are removed at {@link #close()}, and by a
 * start that fails half-way.
 *
 * <p>Thread safety: start and close from one thread.
 */
final class DriverSockets implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(DriverSockets.class);

    private final UnixSockets sockets = UnixSockets.open("qgpu-dra-driver");
    private final Path draSocket;
    private final Path registrationSocket;
    private Server dra;
    private Server registration;

    DriverSockets(Path draSocket, Path registrationSocket) {
        this.draSocket = draSocket;
        this.registrationSocket = registrationSocket;
    }

    /**
     * Serves the DRA services, then registration; when a step fails, what it already served is stopped and its
     * socket removed before the exception leaves (nothing serves from a driver that did not start).
     */
    DriverSockets start(List<BindableService> draServices, BindableService registrationService) throws IOException {
        try {
            Files.createDirectories(draSocket.getParent());
            dra = serve(draSocket, draServices);
            registration = serve(registrationSocket, List.of(registrationService));
            return this;
        } catch (IOException | RuntimeException e) {
            close();
            throw e;
        }
    }

    private Server serve(Path socket, List<BindableService> services) throws IOException {
        if (Files.deleteIfExists(socket)) {
            LOG.info("removed a stale socket {}", socket);
        }
        Server s = sockets.serve(socket, services);
        LOG.info("serving on {}", socket);
        return s;
    }

    /** Stops both servers and removes their socket files. Idempotent. */
    @Override
    public void close() {
        for (Server s : new Server[] {registration, dra}) {
            if (s != null) {
                UnixSockets.stop(s);
            }
        }
        for (Path p : List.of(registrationSocket, draSocket)) {
            try {
                Files.deleteIfExists(p);
            } catch (IOException e) {
                LOG.debug("removing {} failed", p, e);
            }
        }
        sockets.close();
    }
}
