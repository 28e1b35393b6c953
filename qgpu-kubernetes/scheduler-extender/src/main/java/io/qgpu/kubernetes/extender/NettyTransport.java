package io.qgpu.kubernetes.extender;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The extender's HTTP/1.1 transport on Netty (NIO): each connection is served by one event-loop thread,
 * which reads a request, hands it to the extender ({@link ExtenderServer#handle}) on the same thread and
 * writes the answer, with no hand-off between threads and no change of the socket's blocking mode or
 * selector registration per request (what the JDK's {@code HttpServer} does for every exchange).
 *
 * <p>Requests that wait on other machines (the extender's {@code bind}: its API calls) are handed to a
 * pool of worker threads instead, so that they never hold up the other connections of their event
 * loop; the worker writes the answer. Meanwhile their connection reads no further request (HTTP/1.1
 * answers in order): a request that arrives on it all the same (pipelined behind) waits and is served
 * after the answer. One exception: a pipelined request whose body is over the limit is answered 413 by
 * the aggregator when it arrives, which may be before the answer of the request ahead of it.
 *
 * <p>Bodies are collected by Netty's aggregator up to the limit; a larger one is answered 413 with the
 * extender's JSON error, and the rest of it is read and dropped on a kept-alive connection (so a client
 * still sending gets to read the answer); where the connection cannot be kept (a body without a declared
 * length), the answer is followed by the end of this side's output, and the connection is closed once the
 * client closes it or after five seconds of reading and dropping what it still sends.
 *
 * <p>Thread safety: {@link #start} and {@link #stop} from one thread; the handler runs on the event
 * loops and the workers, as many at once as there are loops and workers together.
 */
final class NettyTransport implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(NettyTransport.class);

    private final EventLoopGroup boss;
    private final EventLoopGroup workers;
    private final ExecutorService offLoop;
    private final Channel listener;

    private NettyTransport(EventLoopGroup boss, EventLoopGroup workers, ExecutorService offLoop, Channel listener) {
        this.boss = boss;
        this.workers = workers;
        this.offLoop = offLoop;
        this.listener = listener;
    }

    /**
     * Binds {@code host:port} and serves. {@code loops} event loops serve the connections (0: one loop,
     * which also accepts: everything on one thread, named {@code qgpu-extender-listener}); their threads
     * are named {@code qgpu-extender-N}. Requests whose path {@code waits} says wait on other machines
     * are served by {@code offLoopThreads} workers ({@code qgpu-extender-worker-N}).
     */
    static NettyTransport start(String host, int port, int loops, int offLoopThreads, int maxBodyBytes,
                                Predicate<String> waits, Consumer<ExtenderServer.Call> handler) throws IOException {
        AtomicInteger n = new AtomicInteger();
        ThreadFactory named = r -> {
            Thread t = new Thread(r, loops == 0 ? "qgpu-extender-listener" : "qgpu-extender-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
        EventLoopGroup workers = new NioEventLoopGroup(Math.max(1, loops), named);
        EventLoopGroup boss = loops == 0 ? workers : new NioEventLoopGroup(1, r -> {
            Thread t = new Thread(r, "qgpu-extender-accept");
            t.setDaemon(true);
            return t;
        });
        AtomicInteger w = new AtomicInteger();
        ExecutorService offLoop = Executors.newFixedThreadPool(offLoopThreads, r -> {
            Thread t = new Thread(r, "qgpu-extender-worker-" + w.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        try {
            Channel ch = new ServerBootstrap().group(boss, workers).channel(NioServerSocketChannel.class)
                    .option(ChannelOption.SO_BACKLOG, 128)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel c) {
                            c.pipeline().addLast(new HttpServerCodec(), new Aggregator(maxBodyBytes), new Handler(handler, waits, offLoop));
                        }
                    })
                    .bind(host, port).syncUninterruptibly().channel();
            return new NettyTransport(boss, workers, offLoop, ch);
        } catch (RuntimeException e) {
            shutdown(boss, workers, offLoop);
            if (e.getCause() instanceof IOException io) {
                throw io;
            }
            throw new IOException("cannot listen on " + host + ":" + port + ": " + e.getMessage(), e);
        }
    }

    /** The bound address. */
    InetSocketAddress address() {
        return (InetSocketAddress) listener.localAddress();
    }

    /**
     * Closes the listener and every connection; waits up to five seconds for the workers' requests
     * under way and for the loops to end.
     */
    void stop() {
        listener.close().syncUninterruptibly();
        shutdown(boss, workers, offLoop);
    }

    @Override
    public void close() {
        stop();
    }

    private static void shutdown(EventLoopGroup boss, EventLoopGroup workers, ExecutorService offLoop) {
        offLoop.shutdown();
        try {
            offLoop.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        workers.shutdownGracefully(0, 5, TimeUnit.SECONDS).awaitUninterruptibly(6, TimeUnit.SECONDS);
        if (boss != workers) {
            boss.shutdownGracefully(0, 5, TimeUnit.SECONDS).awaitUninterruptibly(6, TimeUnit.SECONDS);
        }
    }

    /** Netty's aggregator, with the extender's 413 (its JSON error body) for a body over the limit. */
    private static final class Aggregator extends HttpObjectAggregator {
        /** How long a connection ended after a 413 keeps reading what its client still sends. */
        static final int DRAIN_SECONDS = 5;

        private final int maxBodyBytes;

        Aggregator(int maxBodyBytes) {
            super(maxBodyBytes);
            this.maxBodyBytes = maxBodyBytes;
        }

        /**
         * {@code Expect: 100-continue} with a declared body over the limit: the extender's 413 (with its JSON)
         * instead of Netty's empty one; the client sends no body, and the connection serves on.
         */
        @Override
        protected @Nullable Object newContinueResponse(HttpMessage start, int maxContentLength, ChannelPipeline pipeline) {
            Object answer = super.newContinueResponse(start, maxContentLength, pipeline);
            if (answer instanceof FullHttpResponse r && r.status().equals(HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE)) {
                r.release();
                FullHttpResponse ours = tooLarge(pipeline.channel().alloc(), start, maxBodyBytes);
                HttpUtil.setKeepAlive(ours, HttpUtil.isKeepAlive(start));
                return ours;
            }
            return answer;
        }

        @Override
        protected void handleOversizedMessage(ChannelHandlerContext ctx, HttpMessage oversized) {
            long declared = HttpUtil.getContentLength(oversized, -1L);
            FullHttpResponse r = tooLarge(ctx.alloc(), oversized, maxBodyBytes);
            // the body is still coming unless it was declared and the client keeps the connection: then
            // the aggregator drops the rest of it and the connection serves on; else close after the answer
            boolean keep = declared >= 0 && HttpUtil.isKeepAlive(oversized);
            HttpUtil.setKeepAlive(r, keep);
            var written = ctx.writeAndFlush(r);
            if (!keep) {
                written.addListener(f -> closeAfterDraining(ctx));
            }
        }

        /**
         * Ends a connection whose client may still be sending the rest of a body: the answer is followed
         * by the end of this side's output (so the client reads it whole), what still arrives is read and
         * dropped (the aggregator drops an oversized body's rest), and the connection is closed when the
         * client closes it or after {@link #DRAIN_SECONDS}. Closing at once while the client's bytes are
         * still arriving makes the kernel answer them with a reset, which can discard the answer before the
         * client reads it ({@code BadRequestTest}'s chunked 413 met this under load).
         */
        private static void closeAfterDraining(ChannelHandlerContext ctx) {
            if (!(ctx.channel() instanceof SocketChannel socket) || !socket.isActive()) {
                ctx.close();
                return;
            }
            socket.shutdownOutput().addListener(f -> {
                if (!f.isSuccess()) {
                    ctx.close();
                    return;
                }
                ctx.channel().config().setAutoRead(true);
                ctx.executor().schedule(() -> ctx.close(), DRAIN_SECONDS, TimeUnit.SECONDS);
            });
        }
    }

    /** The extender's 413 for {@code oversized}, with its JSON error, logged as the other refusals are. */
    private static FullHttpResponse tooLarge(ByteBufAllocator alloc, HttpMessage oversized, int maxBodyBytes) {
        long declared = HttpUtil.getContentLength(oversized, -1L);
        BadRequestException e = ExtenderServer.tooLarge(declared, maxBodyBytes);
        HttpRequest request = (HttpRequest) oversized;
        LOG.info("{} {} -> 413: {}", request.method(), new QueryStringDecoder(request.uri()).path(), e.getMessage());
        byte[] body = ExtenderRequests.write(new ExtenderProtocol.ErrorBody(e.getMessage()));
        return response(alloc, HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE, body, body.length, "application/json",
                new DefaultHttpHeaders());
    }

    private static FullHttpResponse response(ByteBufAllocator alloc, HttpResponseStatus status, byte[] body, int length,
                                             String contentType, HttpHeaders extra) {
        ByteBuf content = alloc.buffer(length);
        content.writeBytes(body, 0, length);
        FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status, content);
        r.headers().add(extra);
        r.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType);
        r.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, length);
        return r;
    }

    /**
     * Hands each whole request to the extender: on this event loop's thread, or on a worker for a path
     * that waits on other machines. One per connection; its fields are the event loop's.
     */
    private static final class Handler extends SimpleChannelInboundHandler<FullHttpRequest> {
        private final Consumer<ExtenderServer.Call> handler;
        private final Predicate<String> waits;
        private final ExecutorService offLoop;
        /** A request of this connection is with a worker: the next ones wait (answers go in order). */
        private boolean busy;
        private final ArrayDeque<FullHttpRequest> waiting = new ArrayDeque<>();

        Handler(Consumer<ExtenderServer.Call> handler, Predicate<String> waits, ExecutorService offLoop) {
            this.handler = handler;
            this.waits = waits;
            this.offLoop = offLoop;
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest request) {
            if (busy) {
                waiting.add(request.retain());
                ctx.channel().config().setAutoRead(false);   // read no more until the answers are out
                return;
            }
            serve(ctx, request);
        }

        private void serve(ChannelHandlerContext ctx, FullHttpRequest request) {
            if (!request.decoderResult().isSuccess()) {
                byte[] body = ExtenderRequests.write(new ExtenderProtocol.ErrorBody("malformed HTTP request: "
                        + request.decoderResult().cause()));
                FullHttpResponse r = response(ctx.alloc(), HttpResponseStatus.BAD_REQUEST, body, body.length, "application/json",
                        new DefaultHttpHeaders());
                HttpUtil.setKeepAlive(r, false);
                ctx.writeAndFlush(r).addListener(ChannelFutureListener.CLOSE);
                return;
            }
            NettyCall call = new NettyCall(ctx, request);
            if (!waits.test(call.path())) {
                handler.accept(call);
                return;
            }
            busy = true;
            request.retain();
            try {
                offLoop.execute(() -> {
                    try {
                        handler.accept(call);
                    } finally {
                        request.release();
                        try {
                            ctx.channel().eventLoop().execute(() -> resume(ctx));   // after the answer's write, queued first
                        } catch (RejectedExecutionException stopped) {
                            // the loop has ended with the server: nothing waits on this connection any more
                        }
                    }
                });
            } catch (RejectedExecutionException stopping) {
                busy = false;
                request.release();
                handler.accept(call);   // the server is stopping: answered here
            }
        }

        /** On the event loop, once a worker's answer is written: the waiting requests, in order, then reading again. */
        private void resume(ChannelHandlerContext ctx) {
            busy = false;
            FullHttpRequest next;
            while (!busy && (next = waiting.poll()) != null) {
                try {
                    serve(ctx, next);
                } finally {
                    next.release();
                }
            }
            if (!busy) {
                ctx.channel().config().setAutoRead(true);
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) throws Exception {
            FullHttpRequest r;
            while ((r = waiting.poll()) != null) {
                r.release();
            }
            super.channelInactive(ctx);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            LOG.debug("connection {} closed: {}", ctx.channel().remoteAddress(), cause.toString());
            ctx.close();
        }
    }

    /** One request, answered once. */
    private static final class NettyCall implements ExtenderServer.Call {
        private final ChannelHandlerContext ctx;
        private final FullHttpRequest request;
        private final HttpHeaders answerHeaders = new DefaultHttpHeaders(false);
        private boolean answered;

        NettyCall(ChannelHandlerContext ctx, FullHttpRequest request) {
            this.ctx = ctx;
            this.request = request;
        }

        @Override
        public String method() {
            return request.method().name();
        }

        @Override
        public String path() {
            return new QueryStringDecoder(request.uri()).path();
        }

        @Override
        public @Nullable String header(String name) {
            return request.headers().get(name);
        }

        @Override
        public byte[] body() {
            ByteBuf content = request.content();   // the aggregator kept it within the limit
            return ByteBufUtil.getBytes(content, content.readerIndex(), content.readableBytes(), false);
        }

        @Override
        public void header(String name, String value) {
            answerHeaders.set(name, value);
        }

        @Override
        public void reply(int status, byte[] body, int length, String contentType) {
            if (answered) {
                throw new IllegalStateException("answered already");
            }
            answered = true;
            boolean head = request.method().equals(HttpMethod.HEAD);
            FullHttpResponse r = response(ctx.alloc(), HttpResponseStatus.valueOf(status), body, head ? 0 : length, contentType,
                    answerHeaders);
            if (head) {
                r.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, length);
            }
            boolean keep = HttpUtil.isKeepAlive(request);
            HttpUtil.setKeepAlive(r, keep);   // HTTP/1.1: "Connection: close" when not kept
            var written = ctx.writeAndFlush(r);
            if (!keep) {
                written.addListener(ChannelFutureListener.CLOSE);
            }
        }
    }
}
