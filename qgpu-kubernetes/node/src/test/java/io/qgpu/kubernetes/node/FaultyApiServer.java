package io.qgpu.kubernetes.node;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.Status;
import io.fabric8.kubernetes.api.model.StatusBuilder;
import io.fabric8.kubernetes.api.model.StatusDetailsBuilder;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.server.mock.KubernetesMixedDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.fabric8.kubernetes.client.utils.Serialization;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.fabric8.mockwebserver.ServerRequest;
import io.fabric8.mockwebserver.ServerResponse;
import io.fabric8.mockwebserver.http.Dispatcher;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.RecordedRequest;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.regex.Pattern;

/**
 * fabric8's mock API server in CRUD mode (real HTTP, objects kept by fabric8's
 * {@link KubernetesMixedDispatcher}) with faults injected in front of it, and clients for it whose retry
 * budget is set explicitly, so that a test can make the API server fail as a real one does: answer
 * 409/403/404/422/429/5xx with a Kubernetes {@code Status} body, be down for longer than the client retries,
 * reset connections, or answer slowly.
 *
 * <pre>{@code
 * try (FaultyApiServer api = new FaultyApiServer()) {
 *     KubernetesClient client = api.client();                        // RETRY_LIMIT retries, RETRY_INTERVAL apart
 *     api.failNext(1, 409, Match.of("PUT", "/resourceslices/"));     // the next update of a slice: Conflict
 *     api.down();                                                    // every request: 503, until up()
 *     assertThrows(KubernetesClientException.class, () -> client.resource(slice).create());
 *     assertEquals(FaultyApiServer.ATTEMPTS, api.injected());        // the client gave up before the server came back
 *     api.up();
 *     client.resource(slice).create();                               // stored in the CRUD store
 * }
 * }</pre>
 *
 * <h2>How it is put together</h2>
 * A {@link KubernetesMockServer} (plain HTTP on the loopback) is constructed with a {@link Dispatcher} of this
 * class that wraps a {@link KubernetesMixedDispatcher} (what {@code @EnableKubernetesMockClient(crud = true)}
 * uses: the server's own expectations for {@code /} and {@code /version}, and the CRUD store for the rest).
 * Status faults and delays are decided in that dispatcher, on the server's Vert.x event-loop threads, before
 * the request reaches the store: a faulted request changes nothing there. In front of the mock server sits a
 * small TCP relay (the address clients get), which is what can reset connections ({@link Outage#RESET}); it
 * passes bytes through unchanged otherwise.
 *
 * <h2>How fabric8's client retries (7.5.2, read in {@code StandardHttpClient}, {@code AsyncUtils} and
 * {@code ExponentialBackoffIntervalCalculator}, and observed in {@link FaultyApiServerTest})</h2>
 * <ul>
 *   <li>Every request (any method, POST and PUT included) is retried when the answer is <b>429 or any code
 *       {@code >= 500}</b>, or when it fails with an {@link IOException} (connection refused, connection reset
 *       by peer). No other status is retried: 400/403/404/409/410/422 reach the caller at once.</li>
 *   <li>At most {@code requestRetryBackoffLimit} retries, so {@code 1 + requestRetryBackoffLimit} attempts; the
 *       {@code i}-th retry (from 0) waits {@code requestRetryBackoffInterval * 2^min(i, 5)} ms. The defaults are
 *       10 retries from 100 ms (100 + 200 + ... + 3200 = 19.1 s of back-off); {@link #client()} uses {@value #RETRY_LIMIT} retries
 *       from {@code RETRY_INTERVAL} (20 ms): {@value #ATTEMPTS} attempts, 20 + 40 + 80 = 140 ms of back-off.
 *       When the retries are spent, the last answer becomes the {@code KubernetesClientException} (its code is
 *       that answer's code).</li>
 *   <li>{@code Retry-After} is read but, in 7.5.2, not used: {@code StandardHttpClient.shouldRetry} returns
 *       {@code max(Retry-After, back-off)} and {@code AsyncUtils.retryWithExponentialBackoff} then schedules the
 *       retry after the back-off alone. Observed: the {@value #ATTEMPTS} attempts against 429 with
 *       {@code Retry-After: 1} took about 0.2 s in all, not 3 s.</li>
 *   <li>A request that outlives {@code requestTimeout} fails with Vert.x's {@code NoStackTraceTimeoutException},
 *       which is not an {@code IOException}, and is not retried (observed: one attempt). The server may have
 *       applied it all the same (observed: the timed-out POST's object is in the store).</li>
 *   <li>A connection reset ({@link Outage#RESET}) reaches the client as an {@code IOException} ("Connection
 *       reset") and is retried like a 5xx (observed: {@value #ATTEMPTS} resets, then a
 *       {@code KubernetesClientException} with that cause and code -1). A refused connection (nothing listening)
 *       is an {@code IOException} too (observed: "Connection refused", with the back-off's delay before the
 *       exception).</li>
 *   <li>Through the resource DSL, a 404 on a GET is no exception: {@code withName(n).get()} returns
 *       {@code null}, so an injected 404 looks like a missing object.</li>
 * </ul>
 *
 * <h2>Which fault answers a request</h2>
 * While {@link #down()} ({@link Outage#UNAVAILABLE}), every request gets 503 and no {@link #failNext} rule is
 * used up. Otherwise the oldest {@link #failNext} rule whose {@link Match} fits and which has answers left
 * answers it; else it passes to the store. {@link #slow} delays whichever answer a matching request gets.
 *
 * <p>Thread safety: thread-safe. Fault rules are guarded by a lock, the outage and the delay are volatile,
 * counters are atomics and the log is guarded by the lock; the dispatcher runs on the mock server's event-loop
 * threads and the relay on its own daemon threads, the test on its own.
 */
public final class FaultyApiServer implements AutoCloseable {
    /** {@code requestRetryBackoffLimit} of {@link #client()}: retries after the first attempt. */
    public static final int RETRY_LIMIT = 3;
    /** Attempts {@link #client()} makes of a request that keeps failing with a retried status or a reset. */
    public static final int ATTEMPTS = 1 + RETRY_LIMIT;
    /** {@code requestRetryBackoffInterval} of {@link #client()}: the first retry's wait, doubled for each next. */
    public static final Duration RETRY_INTERVAL = Duration.ofMillis(20);
    /** {@code requestTimeout} of {@link #client()}. */
    public static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(2);
    /** {@code connectionTimeout} of {@link #client()}. */
    public static final Duration CONNECTION_TIMEOUT = Duration.ofSeconds(1);
    /** {@link Exchange#code()} of a request answered by resetting its connection. */
    public static final int RESET = 0;

    private static final KubernetesSerialization JSON = new KubernetesSerialization();

    /** How the server is down between {@link #down(Outage)} and {@link #up()}. */
    public enum Outage {
        /** Every request is answered 503 ServiceUnavailable with a Status body (an API server behind a load balancer). */
        UNAVAILABLE,
        /**
         * Every request's connection is reset (TCP RST) once the request's first bytes arrive; nothing is
         * answered and nothing reaches the store. The client's Vert.x logs each reset at ERROR.
         */
        RESET
    }

    /**
     * Which requests a fault applies to: an HTTP method (null: any) and a regular expression found anywhere in
     * the request path, query string included (null: any).
     *
     * @param method upper-case HTTP method, or null for any
     * @param path   pattern searched for ({@link java.util.regex.Matcher#find()}) in the path, or null for any
     */
    public record Match(String method, Pattern path) {
        /** Every request. */
        public static final Match ANY = new Match(null, null);

        /** Requests with this method (null: any) whose path contains a match of {@code pathRegex} (null: any). */
        public static Match of(String method, String pathRegex) {
            return new Match(method, pathRegex == null ? null : Pattern.compile(pathRegex));
        }

        /** Requests of any method whose path contains a match of {@code pathRegex}, e.g. {@code "/resourceslices"}. */
        public static Match path(String pathRegex) {
            return of(null, pathRegex);
        }

        /** Whether a request with this method and path is one of these. */
        public boolean test(String requestMethod, String requestPath) {
            return (method == null || method.equalsIgnoreCase(requestMethod))
                    && (path == null || path.matcher(requestPath).find());
        }
    }

    /**
     * One request as the server saw it.
     *
     * @param method   HTTP method ({@code "?"} if a reset request's first bytes held no request line)
     * @param path     request path with its query string
     * @param code     the status answered, or {@link #RESET} if the connection was reset instead
     * @param injected true if a fault answered it, false if the CRUD store (or the server's own expectations) did
     */
    public record Exchange(String method, String path, int code, boolean injected) {
    }

    private record Rule(Match match, int status, AtomicInteger left) {
    }

    private record Delay(Duration duration, Match match) {
    }

    private final Object lock = new Object();
    private final List<Rule> rules = new ArrayList<>();
    private volatile Outage outage;
    private volatile Delay delay;
    private final AtomicInteger injected = new AtomicInteger();
    private final AtomicInteger passed = new AtomicInteger();
    private final List<Exchange> log = new ArrayList<>(); // guarded by lock
    private final List<KubernetesClient> clients = new CopyOnWriteArrayList<>();
    private final KubernetesMockServer mock;
    private final Relay relay;
    private volatile KubernetesClient client;
    private final AtomicBoolean closed = new AtomicBoolean();

    /**
     * Starts the mock server and its relay on the loopback interface (free ports), with no fault set.
     *
     * @throws UncheckedIOException if the relay cannot listen
     */
    public FaultyApiServer() {
        Map<ServerRequest, Queue<ServerResponse>> responses = new HashMap<>();
        mock = new KubernetesMockServer(new Context(Serialization.jsonMapper()), new MockWebServer(), responses,
                new FaultDispatcher(new KubernetesMixedDispatcher(responses)), false);
        mock.init();
        try {
            relay = new Relay(mock.getPort());
        } catch (IOException e) {
            mock.destroy();
            throw new UncheckedIOException("cannot start the relay", e);
        }
    }

    /** The API server's URL, as clients must use it (the relay's address), ending in {@code /}. */
    public String url() {
        return relay.url();
    }

    /**
     * The client of this server with the budget documented above ({@value #RETRY_LIMIT} retries from
     * {@code RETRY_INTERVAL}, {@code REQUEST_TIMEOUT}, {@code CONNECTION_TIMEOUT}); the same one on every call,
     * closed by {@link #close()}.
     */
    public KubernetesClient client() {
        KubernetesClient c = client;
        if (c == null) {
            synchronized (clients) {
                c = client;
                if (c == null) {
                    c = client(b -> { });
                    client = c;
                }
            }
        }
        return c;
    }

    /**
     * A new client of this server: the settings of {@link #client()}, then {@code tweak} applied to them; closed
     * by {@link #close()}. For example {@code api.client(c -> c.withRequestRetryBackoffLimit(0))} for a client
     * that does not retry, or {@code c -> c.withRequestTimeout(300)} for a short request timeout (milliseconds).
     */
    public KubernetesClient client(Consumer<ConfigBuilder> tweak) {
        ConfigBuilder b = new ConfigBuilder(Config.empty())
                .withMasterUrl(url())
                .withNamespace("test")
                .withHttp2Disable(true)
                .withRequestRetryBackoffLimit(RETRY_LIMIT)
                .withRequestRetryBackoffInterval((int) RETRY_INTERVAL.toMillis())
                .withRequestTimeout((int) REQUEST_TIMEOUT.toMillis())
                .withConnectionTimeout((int) CONNECTION_TIMEOUT.toMillis());
        tweak.accept(b);
        KubernetesClient c = new KubernetesClientBuilder().withConfig(b.build()).build();
        clients.add(c);
        return c;
    }

    /** {@link #failNext(int, int, Match)} for any request. */
    public FaultyApiServer failNext(int n, int status) {
        return failNext(n, status, Match.ANY);
    }

    /**
     * The next {@code n} requests that {@code match} are answered {@code status} with a Kubernetes {@code Status}
     * body (kind Status, apiVersion v1, status Failure, the code, its reason, a message and details naming the
     * resource), instead of reaching the store. Reasons: 400 BadRequest, 401 Unauthorized, 403 Forbidden, 404
     * NotFound, 405 MethodNotAllowed, 409 AlreadyExists for a POST and Conflict otherwise, 410 Expired, 422
     * Invalid, 429 TooManyRequests (with {@code Retry-After: 1} and {@code retryAfterSeconds: 1}), 500
     * InternalError (Kubernetes' name for it), 503 ServiceUnavailable, 504 Timeout, none for others.
     *
     * <pre>{@code api.failNext(FaultyApiServer.ATTEMPTS, 429, Match.path("/resourceslices"));}</pre>
     *
     * @param n      how many requests to fail, at least 1
     * @param status an HTTP status from 400 to 599
     * @return this server
     */
    public FaultyApiServer failNext(int n, int status, Match match) {
        if (n < 1 || status < 400 || status > 599) {
            throw new IllegalArgumentException("n >= 1 and a status from 400 to 599: " + n + ", " + status);
        }
        synchronized (lock) {
            rules.add(new Rule(Objects.requireNonNull(match, "match"), status, new AtomicInteger(n)));
        }
        return this;
    }

    /** {@link #down(Outage)} with {@link Outage#UNAVAILABLE}: every request gets 503 until {@link #up()}. */
    public FaultyApiServer down() {
        return down(Outage.UNAVAILABLE);
    }

    /**
     * Takes the server down until {@link #up()}: every request, of any method and path, gets the outage's answer.
     *
     * <pre>{@code api.down(Outage.RESET); ... api.up();}</pre>
     *
     * @return this server
     */
    public FaultyApiServer down(Outage how) {
        outage = Objects.requireNonNull(how, "how");
        return this;
    }

    /** Ends an outage; the {@link #failNext} rules and the delay stay as they are. Returns this server. */
    public FaultyApiServer up() {
        outage = null;
        return this;
    }

    /** The current outage, or null while up. */
    public Outage outage() {
        return outage;
    }

    /** {@link #slow(Duration, Match)} for any request. */
    public FaultyApiServer slow(Duration d) {
        return slow(d, Match.ANY);
    }

    /**
     * Delays the answers (the store's and the injected ones) to requests that {@code match} by {@code d}, without
     * blocking the server's threads, until set again; {@link Duration#ZERO} ends it. The mock server delays only
     * answers with a body (every injected answer has one, and so do the store's to reads and writes); resets
     * are not delayed.
     *
     * <pre>{@code api.slow(Duration.ofMillis(300), Match.of("GET", "/resourceclaims/"));}</pre>
     *
     * @return this server
     */
    public FaultyApiServer slow(Duration d, Match match) {
        Objects.requireNonNull(match, "match");
        if (d.isNegative()) {
            throw new IllegalArgumentException("negative delay: " + d);
        }
        delay = d.isZero() ? null : new Delay(d, match);
        return this;
    }

    /** Removes every fault: the {@link #failNext} rules not used up, the outage and the delay. Returns this server. */
    public FaultyApiServer clearFaults() {
        synchronized (lock) {
            rules.clear();
        }
        outage = null;
        delay = null;
        return this;
    }

    /** Requests answered by a fault (a status or a reset) since the start or {@link #clearRequests()}. */
    public int injected() {
        return injected.get();
    }

    /** Requests passed to the store since the start or {@link #clearRequests()}. */
    public int passed() {
        return passed.get();
    }

    /** The requests seen since the start or {@link #clearRequests()}, oldest first (a copy). */
    public List<Exchange> requests() {
        synchronized (lock) {
            return List.copyOf(log);
        }
    }

    /** Forgets the requests seen and sets {@link #injected()} and {@link #passed()} to 0. Returns this server. */
    public FaultyApiServer clearRequests() {
        synchronized (lock) {
            log.clear();
            injected.set(0);
            passed.set(0);
        }
        return this;
    }

    /** Closes the clients made by {@link #client}, the relay and the mock server; once, later calls do nothing. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        for (KubernetesClient c : clients) {
            c.close();
        }
        relay.close();
        mock.destroy();
    }

    /** The status a fault answers this request with, or null to pass it on; uses up one answer of a rule. */
    private Integer faultFor(String method, String path) {
        if (outage == Outage.UNAVAILABLE) {
            return 503;
        }
        synchronized (lock) {
            for (Iterator<Rule> it = rules.iterator(); it.hasNext(); ) {
                Rule r = it.next();
                if (r.match().test(method, path)) {
                    if (r.left().decrementAndGet() == 0) {
                        it.remove();
                    }
                    return r.status();
                }
            }
        }
        return null;
    }

    private void record(Exchange e) {
        synchronized (lock) {
            (e.injected() ? injected : passed).incrementAndGet();
            log.add(e);
        }
    }

    /** Wraps the CRUD dispatcher: faults first, then the store; runs on the mock server's event-loop threads. */
    private final class FaultDispatcher extends Dispatcher {
        private final Dispatcher store;

        FaultDispatcher(Dispatcher store) {
            this.store = store;
        }

        @Override
        public MockResponse dispatch(RecordedRequest request) {
            String method = request.getMethod();
            String path = request.getPath();
            Integer fault = faultFor(method, path);
            MockResponse response = fault == null ? store.dispatch(request) : statusResponse(fault, request);
            Delay d = delay;
            if (d != null && d.match().test(method, path)) {
                response.setBodyDelay(d.duration());
            }
            record(new Exchange(method, path, response.code(), fault != null));
            return response;
        }

        @Override
        public void shutdown() {
            store.shutdown();
        }
    }

    /** A Kubernetes Status answer as the API server gives it for {@code code}. */
    private static MockResponse statusResponse(int code, RecordedRequest request) {
        Target t = Target.of(request);
        String what = t.qualified() + (t.name().isEmpty() ? "" : " \"" + t.name() + "\"");
        String reason;
        String message;
        switch (code) {
            case 400 -> { reason = "BadRequest"; message = "the request is invalid"; }
            case 401 -> { reason = "Unauthorized"; message = "Unauthorized"; }
            case 403 -> { reason = "Forbidden"; message = what + " is forbidden: the user cannot "
                    + request.getMethod().toLowerCase(Locale.ROOT) + " this resource"; }
            case 404 -> { reason = "NotFound"; message = what + " not found"; }
            case 405 -> { reason = "MethodNotAllowed"; message = "the server does not allow this method on the requested resource"; }
            case 409 -> {
                if ("POST".equalsIgnoreCase(request.getMethod())) {
                    reason = "AlreadyExists";
                    message = what + " already exists";
                } else {
                    reason = "Conflict";
                    message = "Operation cannot be fulfilled on " + what
                            + ": the object has been modified; please apply your changes to the latest version and try again";
                }
            }
            case 410 -> { reason = "Expired"; message = "too old resource version"; }
            case 422 -> { reason = "Invalid"; message = what + " is invalid: spec: Invalid value"; }
            case 429 -> { reason = "TooManyRequests"; message = "Too many requests, please try again later."; }
            case 500 -> { reason = "InternalError"; message = "Internal error occurred"; }
            case 503 -> { reason = "ServiceUnavailable"; message = "the server is currently unable to handle the request"; }
            case 504 -> { reason = "Timeout"; message = "the server was unable to return a response in the time allotted"; }
            default -> { reason = ""; message = "status " + code; }
        }
        StatusDetailsBuilder details = new StatusDetailsBuilder().withGroup(t.group()).withKind(t.resource());
        if (!t.name().isEmpty()) {
            details.withName(t.name());
        }
        if (code == 429) {
            details.withRetryAfterSeconds(1);
        }
        Status status = new StatusBuilder().withApiVersion("v1").withKind("Status").withNewMetadata().endMetadata()
                .withStatus("Failure").withCode(code).withReason(reason)
                .withMessage(message + " (injected by FaultyApiServer)").withDetails(details.build()).build();
        MockResponse response = new MockResponse().setResponseCode(code)
                .setHeader("Content-Type", "application/json").setBody(JSON.asJson(status));
        if (code == 429) {
            response.setHeader("Retry-After", "1");
        }
        return response;
    }

    /** The group, resource and name a request path names ({@code /apis/<g>/<v>/[namespaces/<ns>/]<resource>[/<name>]}). */
    private record Target(String group, String resource, String name) {
        String qualified() {
            return group.isEmpty() ? resource : resource + "." + group;
        }

        static Target of(RecordedRequest request) {
            String path = request.getPath();
            int q = path.indexOf('?');
            List<String> p = Arrays.stream((q < 0 ? path : path.substring(0, q)).split("/")).filter(s -> !s.isEmpty()).toList();
            int rest;
            String group;
            if (p.size() >= 2 && p.get(0).equals("api")) {
                group = "";
                rest = 2;
            } else if (p.size() >= 3 && p.get(0).equals("apis")) {
                group = p.get(1);
                rest = 3;
            } else {
                return new Target("", path, "");
            }
            if (p.size() >= rest + 3 && p.get(rest).equals("namespaces")) {
                rest += 2;
            }
            String resource = p.size() > rest ? p.get(rest) : "";
            String name = p.size() > rest + 1 ? p.get(rest + 1) : nameInBody(request);
            return new Target(group, resource, name);
        }

        /** The metadata.name of the object a POST sends, or "". */
        private static String nameInBody(RecordedRequest request) {
            String body = request.getUtf8Body();
            if (body == null || body.isBlank()) {
                return "";
            }
            try {
                GenericKubernetesResource r = JSON.unmarshal(body, GenericKubernetesResource.class);
                return r.getMetadata() == null || r.getMetadata().getName() == null ? "" : r.getMetadata().getName();
            } catch (RuntimeException e) {
                return "";
            }
        }
    }

    /**
     * A TCP relay from the clients' address to the mock server, which resets connections during an
     * {@link Outage#RESET}; two daemon threads per connection.
     */
    private final class Relay implements AutoCloseable {
        private final int backendPort;
        private final ServerSocket listener;
        private final Set<Socket> open = ConcurrentHashMap.newKeySet();
        private volatile boolean closed;

        Relay(int backendPort) throws IOException {
            this.backendPort = backendPort;
            listener = new ServerSocket();
            listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            daemon("faulty-api-accept", this::acceptLoop).start();
        }

        public String url() {
            String host = listener.getInetAddress().getHostAddress();
            return "http://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + listener.getLocalPort() + "/";
        }

        private void acceptLoop() {
            while (!closed) {
                Socket front;
                try {
                    front = listener.accept();
                } catch (IOException e) {
                    return; // closed
                }
                Socket back = null;
                try {
                    front.setTcpNoDelay(true);
                    back = new Socket(InetAddress.getLoopbackAddress(), backendPort);
                    back.setTcpNoDelay(true);
                } catch (IOException e) {
                    quietly(front);
                    quietly(back);
                    continue;
                }
                open.add(front);
                open.add(back);
                Socket b = back;
                daemon("faulty-api-request", () -> pump(front, b, true)).start();
                daemon("faulty-api-answer", () -> pump(b, front, false)).start();
            }
        }

        /** Copies {@code from} to {@code to} until either ends; from the client, resets during a RESET outage. */
        private void pump(Socket from, Socket to, boolean fromClient) {
            byte[] buf = new byte[16 * 1024];
            try {
                InputStream in = from.getInputStream();
                OutputStream out = to.getOutputStream();
                for (int n; (n = in.read(buf)) >= 0; ) {
                    if (fromClient && outage == Outage.RESET) {
                        String[] line = requestLine(buf, n);
                        record(new Exchange(line[0], line[1], RESET, true)); // before the client can see the reset
                        reset(from);
                        quietly(to);
                        return;
                    }
                    out.write(buf, 0, n);
                    out.flush();
                }
            } catch (IOException e) {
                // one side went away: close both
            } finally {
                quietly(from);
                quietly(to);
            }
        }

        private static String[] requestLine(byte[] buf, int n) {
            String s = new String(buf, 0, Math.min(n, 4096), StandardCharsets.ISO_8859_1);
            int eol = s.indexOf("\r\n");
            String[] parts = (eol < 0 ? "" : s.substring(0, eol)).split(" ");
            return parts.length >= 2 ? new String[] {parts[0], parts[1]} : new String[] {"?", "?"};
        }

        private void reset(Socket s) {
            try {
                s.setSoLinger(true, 0); // close() then sends RST instead of FIN
            } catch (IOException e) {
                // already closed
            }
            quietly(s);
        }

        private void quietly(Socket s) {
            if (s != null) {
                open.remove(s);
                try {
                    s.close();
                } catch (IOException e) {
                    // nothing to do
                }
            }
        }

        @Override
        public void close() {
            closed = true;
            try {
                listener.close();
            } catch (IOException e) {
                // nothing to do
            }
            for (Socket s : open) {
                quietly(s);
            }
        }

        private static Thread daemon(String name, Runnable r) {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        }
    }
}
