package io.qgpu.kubernetes.deviceplugin;

import io.qgpu.kubernetes.node.UnixSockets;
import io.grpc.BindableService;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.StatusRuntimeException;
import io.qgpu.kubernetes.deviceplugin.v1beta1.RegisterRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.RegistrationGrpc;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.ClosedWatchServiceException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchEvent;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The plugin's life cycle with the kubelet: serves the {@code DevicePlugin} service on its socket in
 * the device plugin directory, registers with the kubelet's {@code Registration} service on
 * {@code kubelet.sock}, and watches the directory: when the kubelet restarts it deletes the sockets
 * there and creates {@code kubelet.sock} again, and the plugin then serves again on a fresh socket
 * and registers again. A kubelet that is not up yet is waited for the same way.
 *
 * <pre>{@code
 * try (PluginServer server = new PluginServer(dir, "qgpu.sock", "kubelet.sock", "qgpu.io/gpu", service).start()) {
 *     server.registrations();   // 1 once the kubelet accepted the plugin
 * }
 * }</pre>
 *
 * <p>A refused registration is logged and tried again at the next kubelet start.
 *
 * <p>Thread safety: thread-safe.
 */
public final class PluginServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(PluginServer.class);
    private static final Duration REGISTER_TIMEOUT = Duration.ofSeconds(10);

    private final Path dir;
    private final Path socket;
    private final Path kubeletSocket;
    private final String resourceName;
    private final BindableService service;
    private final AtomicLong registrations = new AtomicLong();
    private UnixSockets sockets;
    private Server server;
    private WatchService watcher;
    private Thread watchThread;
    private boolean closed;

    /**
     * @param dir           the device plugin directory
     * @param endpoint      file name of the plugin's socket in {@code dir}
     * @param kubeletSocket file name of the kubelet's socket in {@code dir}
     * @param resourceName  the extended resource to register
     * @param service       the {@code DevicePlugin} service
     */
    public PluginServer(Path dir, String endpoint, String kubeletSocket, String resourceName, BindableService service) {
        this.dir = dir.toAbsolutePath();
        this.socket = this.dir.resolve(endpoint);
        this.kubeletSocket = this.dir.resolve(kubeletSocket);
        this.resourceName = resourceName;
        this.service = service;
    }

    /**
     * Serves, starts watching the directory, and registers if the kubelet is up. When a step fails, what
     * it opened (event loops, the directory watch, the server and its socket file) is closed before the
     * exception is thrown.
     */
    public synchronized PluginServer start() throws IOException {
        if (!Files.isDirectory(dir)) {
            throw new IOException("device plugin directory " + dir + " does not exist");
        }
        try {
            sockets = UnixSockets.open("qgpu-device-plugin");
            watcher = dir.getFileSystem().newWatchService();
            dir.register(watcher, StandardWatchEventKinds.ENTRY_CREATE);
            serve();
            watchThread = new Thread(this::watch, "qgpu-device-plugin-watch");
            watchThread.setDaemon(true);
            watchThread.start();
        } catch (IOException | RuntimeException e) {
            close();
            throw e;
        }
        if (Files.exists(kubeletSocket)) {
            register();
        } else {
            LOG.info("waiting for the kubelet: {} does not exist yet", kubeletSocket);
        }
        return this;
    }

    /** The plugin's socket. */
    public Path socket() {
        return socket;
    }

    /** How many registrations the kubelet accepted so far. */
    public long registrations() {
        return registrations.get();
    }

    private void serve() throws IOException {
        Files.deleteIfExists(socket);
        server = sockets.serve(socket, List.of(service));
        LOG.info("serving the device plugin API on {}", socket);
    }

    private void register() {
        ManagedChannel ch = sockets.channel(kubeletSocket);
        try {
            RegistrationGrpc.newBlockingStub(ch).withWaitForReady()
                    .withDeadlineAfter(REGISTER_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
                    .register(RegisterRequest.newBuilder()
                            .setVersion(Names.API_VERSION)
                            .setEndpoint(socket.getFileName().toString())
                            .setResourceName(resourceName)
                            .setOptions(DevicePluginService.OPTIONS)
                            .build());
            registrations.incrementAndGet();
            LOG.info("registered {} with the kubelet on {}", resourceName, kubeletSocket);
        } catch (StatusRuntimeException e) {
            LOG.error("the kubelet on {} did not register {}: {}; trying again when it restarts", kubeletSocket, resourceName,
                    e.getStatus());
        } finally {
            UnixSockets.stop(ch);
        }
    }

    /** The kubelet (re)started: serve on a fresh socket (it removed ours) and register again. */
    private synchronized void kubeletStarted() {
        if (closed) {
            return;
        }
        LOG.info("{} was created: the kubelet (re)started", kubeletSocket);
        try {
            UnixSockets.stop(server);
            serve();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot serve on " + socket, e);
        }
        register();
    }

    private void watch() {
        while (true) {
            WatchKey key;
            try {
                key = watcher.take();
            } catch (ClosedWatchServiceException | InterruptedException e) {
                return;
            }
            boolean restarted = false;
            for (WatchEvent<?> e : key.pollEvents()) {
                if (e.kind() == StandardWatchEventKinds.OVERFLOW) {
                    restarted |= Files.exists(kubeletSocket);
                } else if (kubeletSocket.getFileName().equals(e.context())) {
                    restarted = true;
                }
            }
            key.reset();
            if (restarted) {
                try {
                    kubeletStarted();
                } catch (RuntimeException ex) {
                    LOG.error("could not serve again after the kubelet restarted", ex);
                }
            }
        }
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        try {
            if (watcher != null) {
                watcher.close();
            }
        } catch (IOException e) {
            LOG.debug("closing the directory watch failed", e);
        }
        if (watchThread != null) {
            try {
                watchThread.join(TimeUnit.SECONDS.toMillis(5));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        synchronized (this) {
            if (server != null) {
                UnixSockets.stop(server);
            }
            try {
                Files.deleteIfExists(socket);
            } catch (IOException e) {
                LOG.debug("removing {} failed", socket, e);
            }
            if (sockets != null) {
                sockets.close();
            }
        }
    }
}
