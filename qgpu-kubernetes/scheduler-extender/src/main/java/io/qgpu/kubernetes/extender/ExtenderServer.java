package io.qgpu.kubernetes.extender;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Validate;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The HTTP side of the extender, on Netty ({@link NettyTransport}): {@code POST {urlPrefix}/filter},
 * {@code POST {urlPrefix}/prioritize}, {@code POST {urlPrefix}/bind} and {@code POST {urlPrefix}/preempt}, plus {@code GET /healthz},
 * {@code GET /readyz} (200 when ready, 503 when not: see {@link Builder#readiness}) and,
 * when a view is given, {@code GET {urlPrefix}/ledger}.
 *
 * <p>Answers: 200 with the protocol's JSON; 400 for a malformed or invalid request, 404 for an
 * unknown path, 405 for a wrong method (with {@code Allow}), 413 for a body over the limit, 415 for a
 * body that is not JSON; every 4xx has the body {@code {"Error": "..."}}. A 500 means a bug in the
 * extender, never bad input. 503 (with {@code Retry-After}) when a
 * {@link NotLeaderException} says this replica is not the leader. No exception leaves a handler: every exchange is answered and closed.
 *
 * <pre>{@code
 * ExtenderServer server = ExtenderServer.builder(extender)
 *         .host("127.0.0.1").port(8888).urlPrefix("/qgpu").maxBodyBytes(4 << 20).threads(8)
 *         .build().start();
 * server.port();        // the bound port (useful with port 0)
 * server.stop();
 * }</pre>
 *
 * <p>Thread safety: thread-safe; requests are served by {@code threads} event-loop threads (each
 * connection by one of them, which reads the request, runs the verb and writes the answer without
 * handing it to another thread), or with {@code threads(0)} by one thread that also accepts the
 * connections (the lowest latency for one scheduler's sequential scheduling cycle, at most one core).
 * {@code bind}, whose API calls wait on the API server, is handed to one of {@code workerThreads}
 * workers, so that a slow API server never holds up filter and prioritize on the event loops (unless
 * {@link Extender#bindWaitsOnNetwork} says it waits on nothing, as in the demo mode: then it runs on
 * the event loop like the other verbs).
 */
public final class ExtenderServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ExtenderServer.class);

    /**
     * Each request thread's reply buffer: a reply is written into it once and sent from it. A buffer
     * grown past {@link #KEPT_REPLY_BYTES} is dropped after its reply.
     */
    private static final ThreadLocal<ReplyBuffer> REPLIES = ThreadLocal.withInitial(() -> new ReplyBuffer(64 << 10));
    private static final int KEPT_REPLY_BYTES = 1 << 20;

    /** Default body limit: 4 MiB. */
    public static final int DEFAULT_MAX_BODY_BYTES = 4 << 20;

    private final Extender extender;
    private final String host;
    private final int requestedPort;
    private final String prefix;
    private final int maxBodyBytes;
    private final int threads;
    private final int workerThreads;
    private final java.util.function.Supplier<String> ledgerView;
    // --- leader election: readiness (GET /readyz) ---
    private final java.util.function.BooleanSupplier readiness;
    /** The pods of the last requests (prioritize gets the pod filter read for it). */
    private final RecentPods recentPods = new RecentPods();
    /** The names the last filters passed, by pod (prioritize takes them when it lists the very same). */
    private final FilteredNames filteredNames = new FilteredNames();
    private NettyTransport netty;
    /** {@code {urlPrefix}/verb} for each of {@link #VERBS}, made once (every request is routed by it). */
    private final String[] verbPaths;
    /** Whether bind waits on the API server ({@link Extender#bindWaitsOnNetwork}): then it runs on a worker. */
    private final boolean bindWaits;

    private ExtenderServer(Builder b) {
        this.extender = b.extender;
        this.host = b.host;
        this.requestedPort = b.port;
        this.prefix = b.urlPrefix;
        this.maxBodyBytes = b.maxBodyBytes;
        this.threads = b.threads;
        this.workerThreads = b.workerThreads;
        this.ledgerView = b.ledgerView;
        this.readiness = b.readiness;
        this.verbPaths = new String[VERBS.length];
        for (int v = 0; v < VERBS.length; v++) {
            verbPaths[v] = prefix + "/" + VERBS[v];
        }
        this.bindWaits = extender.bindWaitsOnNetwork();
    }

    public static Builder builder(Extender extender) {
        return new Builder(extender);
    }

    /** Binds the port and starts serving. */
    public synchronized ExtenderServer start() throws IOException {
        if (netty != null) {
            throw new IllegalStateException("already started");
        }
        netty = NettyTransport.start(host, requestedPort, threads, workerThreads, maxBodyBytes, p -> bindWaits && "bind".equals(verbOf(p)),
                this::handle);
        LOG.info("extender listening on {}:{} under {} (filter, prioritize, bind, preempt)", host, port(), prefix.isEmpty() ? "/" : prefix);
        return this;
    }

    /** The bound port. */
    public synchronized int port() {
        return address().getPort();
    }

    /** The address the server listens on. */
    public synchronized InetSocketAddress address() {
        if (netty == null) {
            throw new IllegalStateException("not started");
        }
        return netty.address();
    }

    /** The URL prefix, for example {@code http://127.0.0.1:8888/qgpu}. */
    public String baseUrl() {
        return "http://" + (host.equals("0.0.0.0") ? "127.0.0.1" : host) + ":" + port() + prefix;
    }

    /**
     * Stops serving: closes the listener and idle connections at once, then waits up to five seconds
     * for the exchanges already being handled (a scheduler retries a call cut short).
     */
    public synchronized void stop() {
        if (netty != null) {
            netty.stop();
            netty = null;
        }
    }

    @Override
    public void close() {
        stop();
    }

    // ------------------------------------------------------------------ dispatch

    /**
     * One exchange as a transport hands it over: the request's method, path and headers, its body
     * (within the limit), and the one answer. The transport ({@link NettyTransport}) makes one per
     * request; {@link #handle} routes it.
     */
    interface Call {
        String method();

        /** The request path, without the query. */
        String path();

        /** The first value of a request header, or {@code null}. */
        @Nullable String header(String name);

        /** The request body, within the server's limit (the transport answers 413 to a larger one before this call). */
        byte[] body();

        /** Sets a header of the answer (before {@link #reply}). */
        void header(String name, String value);

        /** Answers with {@code body[0, length)} ({@code HEAD}: the length, no body). Called once. */
        void reply(int status, byte[] body, int length, String contentType);
    }

    /** Routes one exchange and answers it; no exception leaves (a bug answers 500). */
    void handle(Call ex) {
        try {
            route(ex);
        } catch (NotLeaderException e) {
            // --- leader election: a follower refuses the verbs; the scheduler retries ---
            ex.header("Retry-After", "1");
            reply(ex, 503, ExtenderRequests.write(new ExtenderProtocol.ErrorBody(e.getMessage())));
        } catch (BadRequestException e) {
            LOG.info("{} {} -> {}: {}", ex.method(), ex.path(), e.status(), e.getMessage());
            reply(ex, e.status(), ExtenderRequests.write(new ExtenderProtocol.ErrorBody(e.getMessage())));
        } catch (Throwable t) {
            // a bug, not bad input: answer 500 and keep serving
            LOG.error("{} {} failed", ex.method(), ex.path(), t);
            reply(ex, 500, ("{\"Error\":\"internal error: " + t.getClass().getSimpleName() + "\"}").getBytes(StandardCharsets.UTF_8));
            if (t instanceof VirtualMachineError vm) {
                throw vm;
            }
        }
    }

    private void route(Call ex) throws IOException {
        String path = ex.path();
        String method = ex.method().toUpperCase(Locale.ROOT);
        if (path.equals("/healthz")) {
            requireRead(ex, method);
            reply(ex, 200, "ok\n".getBytes(StandardCharsets.UTF_8), "text/plain; charset=utf-8");
            return;
        }
        if (path.equals("/readyz")) {
            // --- leader election: ready = may serve the verbs (always, without leader election) ---
            requireRead(ex, method);
            boolean ready = readiness.getAsBoolean();
            reply(ex, ready ? 200 : 503, (ready ? "ok\n" : "not the leader\n").getBytes(StandardCharsets.UTF_8),
                    "text/plain; charset=utf-8");
            return;
        }
        if (ledgerView != null && path.equals(prefix + "/ledger")) {
            requireRead(ex, method);
            reply(ex, 200, ledgerView.get().getBytes(StandardCharsets.UTF_8));
            return;
        }
        String verb = verbOf(path);
        if (verb == null) {
            throw new BadRequestException(404, "no such path " + path + "; the extender serves " + paths());
        }
        requireMethod(ex, method, "POST");
        String type = ex.header("Content-Type");
        if (type != null && !type.isBlank() && !type.toLowerCase(Locale.ROOT).contains("json")) {
            throw new BadRequestException(415, "Content-Type " + type + " is not supported; send application/json");
        }
        byte[] body = ex.body();
        Object answer = switch (verb) {
            case "filter" -> {
                ExtenderRequests.Args args = ExtenderRequests.parseArgs(body, extender.nodeNames(), recentPods);
                ExtenderProtocol.FilterResult passed = extender.filter(args);
                if (passed != null) {
                    filteredNames.file(args.pod(), passed.nodeNames());
                }
                yield passed;
            }
            case "prioritize" -> extender.prioritize(ExtenderRequests.parseArgs(body, extender.nodeNames(), recentPods, filteredNames));
            case "bind" -> extender.bind(ExtenderRequests.parseBinding(body));
            case "preempt" -> extender.preempt(ExtenderRequests.parsePreemption(body));
            default -> throw new IllegalStateException(verb);
        };
        ReplyBuffer out = REPLIES.get();
        try {
            ExtenderRequests.write(answer, out);
            ex.reply(200, out.array(), out.size(), "application/json");
        } finally {
            out.reset();
            if (out.capacity() > KEPT_REPLY_BYTES) {
                REPLIES.remove();   // one large reply does not keep its buffer for the small ones after it
            }
        }
    }

    private static final String[] VERBS = {"filter", "prioritize", "bind", "preempt"};

    /** The verb a path names ({@code {urlPrefix}/verb}, a trailing slash allowed), or null. */
    private String verbOf(String path) {
        String p = path.endsWith("/") && path.length() > 1 ? path.substring(0, path.length() - 1) : path;
        for (int v = 0; v < VERBS.length; v++) {
            if (p.equals(verbPaths[v])) {
                return VERBS[v];
            }
        }
        return null;
    }

    /** Every path this server answers, for the 404 text. */
    String paths() {
        return "POST " + prefix + "/filter, " + prefix + "/prioritize, " + prefix + "/bind and " + prefix + "/preempt; GET (or HEAD) /healthz, "
                + (ledgerView != null ? "/readyz and " + prefix + "/ledger" : "and /readyz");
    }

    /** GET, or HEAD (the same answer without its body). */
    private static void requireRead(Call ex, String method) {
        if (!method.equals("GET") && !method.equals("HEAD")) {
            ex.header("Allow", "GET, HEAD");
            throw new BadRequestException(405, "method " + method + " not allowed on " + ex.path()
                    + "; use GET or HEAD");
        }
    }

    private static void requireMethod(Call ex, String method, String allowed) {
        if (!method.equals(allowed)) {
            ex.header("Allow", allowed);
            throw new BadRequestException(405, "method " + method + " not allowed on " + ex.path()
                    + "; use " + allowed);
        }
    }

    /** The 413 for a body of {@code declared} bytes (-1: not declared, cut off while reading). */
    static BadRequestException tooLarge(long declared, int maxBodyBytes) {
        return new BadRequestException(413, declared >= 0
                ? "request body of " + declared + " bytes is over the limit of " + maxBodyBytes + " bytes (--max-body-bytes)"
                : "request body is over the limit of " + maxBodyBytes + " bytes (--max-body-bytes)");
    }

    private static void reply(Call ex, int status, byte[] body) {
        reply(ex, status, body, "application/json");
    }

    private static void reply(Call ex, int status, byte[] body, String contentType) {
        ex.reply(status, body, body.length, contentType);
    }

    /** Fail-fast builder. Defaults: host 127.0.0.1 (this machine only; 0.0.0.0 for every interface), port 8888, prefix empty, 4 MiB bodies, 8 threads, 16 workers. */
    public static final class Builder {
        private final Extender extender;
        private String host = "127.0.0.1";
        private int port = 8888;
        private String urlPrefix = "";
        private int maxBodyBytes = DEFAULT_MAX_BODY_BYTES;
        private int threads = 8;
        private int workerThreads = 16;
        private java.util.function.Supplier<String> ledgerView;
        private java.util.function.BooleanSupplier readiness = () -> true;

        private Builder(Extender extender) {
            this.extender = Validate.notNull("extender", extender);
        }

        public Builder host(String h) { this.host = Validate.notBlank("server.host", h); return this; }
        public Builder port(int p) { this.port = Validate.between("server.port", p, 0, 65535); return this; }

        /** Path prefix before the verbs, for example {@code /qgpu}; empty or {@code /} for none. */
        public Builder urlPrefix(String p) {
            Validate.notNull("server.urlPrefix", p);
            String s = p.strip();
            while (s.endsWith("/")) {
                s = s.substring(0, s.length() - 1);
            }
            if (!s.isEmpty() && !s.startsWith("/")) {
                s = "/" + s;
            }
            if (s.contains("?") || s.contains("#") || s.contains(" ")) {
                throw new InvalidValueException("server.urlPrefix", p, "must be a plain path such as /qgpu");
            }
            this.urlPrefix = s;
            return this;
        }

        public Builder maxBodyBytes(int n) { this.maxBodyBytes = Validate.between("server.maxBodyBytes", n, 1024, Integer.MAX_VALUE - 16384); return this; }
        /**
         * Request threads (default 8): event loops that serve the connections, each connection on one,
         * its requests one at a time; 0: one thread accepts and serves every connection.
         */
        public Builder threads(int n) { this.threads = Validate.between("server.threads", n, 0, 1024); return this; }

        /**
         * Worker threads (default 16) for {@code bind}, whose API calls wait on the API server: so many
         * binds wait at once without holding up the event loops' filter and prioritize.
         */
        public Builder workerThreads(int n) { this.workerThreads = Validate.between("server.workerThreads", n, 1, 1024); return this; }

        /** Serves {@code GET {urlPrefix}/ledger} with this JSON (for example the ledger's snapshot); off by default. */
        public Builder ledgerView(java.util.function.Supplier<String> view) { this.ledgerView = view; return this; }

        /**
         * {@code GET /readyz}: 200 while this says true, else 503 (leader election: only the leader is
         * ready). Default: always ready.
         */
        public Builder readiness(java.util.function.BooleanSupplier ready) {
            this.readiness = Validate.notNull("server.readiness", ready);
            return this;
        }

        public ExtenderServer build() {
            return new ExtenderServer(this);
        }
    }
}
