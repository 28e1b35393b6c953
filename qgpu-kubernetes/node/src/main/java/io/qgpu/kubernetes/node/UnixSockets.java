package io.qgpu.kubernetes.node;

import io.grpc.BindableService;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.Epoll;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * gRPC over Unix domain sockets with grpc-java's shaded Netty and its epoll transport (Linux; the
 * native part ships inside the grpc-netty-shaded jar). Used by the plugin and by test kubelets.
 *
 * <pre>{@code
 * try (UnixSockets sockets = UnixSockets.open("qgpu-plugin")) {
 *     Server s = sockets.serve(dir.resolve("qgpu.sock"), List.of(service));
 *     ManagedChannel ch = sockets.channel(dir.resolve("kubelet.sock"));
 * }
 * }</pre>
 *
 * <p>Thread safety: thread-safe.
 */
public final class UnixSockets implements AutoCloseable {
    /** The {@code :authority} every channel of this class presents. */
    public static final String AUTHORITY = "localhost";

    private final EventLoopGroup boss;
    private final EventLoopGroup workers;

    private UnixSockets(String name) {
        this.boss = new EpollEventLoopGroup(1, daemons(name + "-accept"));
        this.workers = new EpollEventLoopGroup(2, daemons(name + "-io"));
    }

    /**
     * Event loops for sockets; refuses a platform without the epoll transport.
     *
     * @throws IllegalStateException with the reason when epoll is not available (not Linux, or an
     *                               architecture the shaded Netty has no native part for)
     */
    public static UnixSockets open(String name) {
        if (!Epoll.isAvailable()) {
            throw new IllegalStateException("Unix domain sockets need Netty's epoll transport, which is not available on "
                    + System.getProperty("os.name") + "/" + System.getProperty("os.arch") + ": " + Epoll.unavailabilityCause(),
                    Epoll.unavailabilityCause());
        }
        return new UnixSockets(name);
    }

    /** Starts a server with these services on a socket file (which must not exist). */
    public Server serve(Path socket, List<BindableService> services) throws IOException {
        NettyServerBuilder b = NettyServerBuilder.forAddress(new DomainSocketAddress(socket.toString()))
                .channelType(EpollServerDomainSocketChannel.class)
                .bossEventLoopGroup(boss)
                .workerEventLoopGroup(workers);
        services.forEach(b::addService);
        return b.build().start();
    }

    /**
     * A plaintext channel to a socket file. It presents the HTTP/2 authority {@value #AUTHORITY}, as
     * grpc-go's {@code unix:} scheme does: grpc-java would otherwise send the socket path as
     * {@code :authority}, which a peer that validates its headers (grpc-go's kubelet) refuses.
     */
    public ManagedChannel channel(Path socket) {
        return NettyChannelBuilder.forAddress(new DomainSocketAddress(socket.toString()))
                .channelType(EpollDomainSocketChannel.class)
                .eventLoopGroup(workers)
                .overrideAuthority(AUTHORITY)
                .usePlaintext()
                .build();
    }

    /** Shuts a server down and waits up to five seconds for it. */
    public static void stop(Server server) {
        server.shutdownNow();
        try {
            server.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Shuts a channel down and waits up to five seconds for it. */
    public static void stop(ManagedChannel channel) {
        channel.shutdownNow();
        try {
            channel.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        boss.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        workers.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }

    private static ThreadFactory daemons(String name) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, name + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }
}
