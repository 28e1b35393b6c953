package io.qgpu.kubernetes.node;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.BindableService;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCalls;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The {@code :authority} of a Unix-socket channel against a server that validates it as an HTTP/2 peer
 * such as grpc-go does (a host name, optionally with a port): {@link UnixSockets#channel} presents
 * {@code localhost} and is served; a channel built as before (no authority override) presents the
 * socket path and is refused by the same server, which is the failure this class fixes. Checked by hand:
 * with {@code overrideAuthority} removed from {@link UnixSockets#channel}, the first test fails with
 * "INVALID_ARGUMENT: malformed :authority /tmp/junit-.../echo.sock".
 */
class UnixSocketsAuthorityTest {
    /** A registered host name or IPv4 address, with an optional port: what a strict HTTP/2 server accepts. */
    static final Pattern HOST = Pattern.compile("[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?");

    static final MethodDescriptor.Marshaller<byte[]> BYTES = new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(byte[] value) {
            return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
            try {
                return stream.readAllBytes();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    };
    static final MethodDescriptor<byte[], byte[]> ECHO = MethodDescriptor.<byte[], byte[]>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY).setFullMethodName("test.Echo/Echo")
            .setRequestMarshaller(BYTES).setResponseMarshaller(BYTES).build();

    @TempDir
    Path tmp;
    final Queue<String> seen = new ConcurrentLinkedQueue<>();

    /** Refuses a call whose authority is not a host name, as a header-validating peer does. */
    final ServerInterceptor validating = new ServerInterceptor() {
        @Override
        public <Q, A> ServerCall.Listener<Q> interceptCall(ServerCall<Q, A> call, Metadata headers, ServerCallHandler<Q, A> next) {
            String authority = call.getAuthority();
            seen.add(String.valueOf(authority));
            if (authority == null || !HOST.matcher(authority).matches()) {
                call.close(Status.INVALID_ARGUMENT.withDescription("malformed :authority " + authority), new Metadata());
                return new ServerCall.Listener<>() {
                };
            }
            return next.startCall(call, headers);
        }
    };

    Server echoServer(UnixSockets sockets, Path socket) throws IOException {
        ServerServiceDefinition echo = ServerServiceDefinition.builder("test.Echo")
                .addMethod(ECHO, ServerCalls.asyncUnaryCall((req, out) -> {
                    out.onNext(req);
                    out.onCompleted();
                })).build();
        BindableService service = () -> ServerInterceptors.intercept(echo, validating);
        return sockets.serve(socket, List.of(service));
    }

    static byte[] call(ManagedChannel ch) {
        return ClientCalls.blockingUnaryCall(ch, ECHO, io.grpc.CallOptions.DEFAULT.withDeadlineAfter(10, TimeUnit.SECONDS),
                new byte[] {1, 2, 3});
    }

    @Test
    void theChannelPresentsLocalhostAndAValidatingServerAnswers() throws Exception {
        Path socket = tmp.resolve("echo.sock");
        try (UnixSockets sockets = UnixSockets.open("authority-test")) {
            Server server = echoServer(sockets, socket);
            ManagedChannel ch = sockets.channel(socket);
            try {
                assertArrayEquals(new byte[] {1, 2, 3}, call(ch));
                assertEquals(List.of("localhost"), List.copyOf(seen));
                assertEquals("localhost", ch.authority());
            } finally {
                UnixSockets.stop(ch);
                UnixSockets.stop(server);
            }
        }
    }

    @Test
    void theChannelAsBuiltBeforeSendsTheSocketPathAndIsRefused() throws Exception {
        Path socket = tmp.resolve("echo.sock");
        try (UnixSockets sockets = UnixSockets.open("authority-test")) {
            Server server = echoServer(sockets, socket);
            // the channel as UnixSockets built it before the fix: no authority override
            EpollEventLoopGroup loop = new EpollEventLoopGroup(1);
            ManagedChannel old = NettyChannelBuilder.forAddress(new DomainSocketAddress(socket.toString()))
                    .channelType(EpollDomainSocketChannel.class).eventLoopGroup(loop).usePlaintext().build();
            try {
                StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> call(old));
                assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode());
                String sent = seen.peek();
                assertTrue(sent != null && sent.contains(socket.getFileName().toString()),
                        "the old channel sent the socket path as :authority: " + sent);
            } finally {
                UnixSockets.stop(old);
                UnixSockets.stop(server);
                loop.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
            }
        }
    }
}
