package io.qgpu.kubernetes.extender;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementConfig;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/**
 * The extender's HTTP transport on the wire, read byte by byte from raw sockets (no HTTP client library in
 * between): several requests on one kept-alive connection, a 413 after which the same connection
 * serves on, {@code Connection: close} honoured, a request that is not HTTP answered 400 and closed,
 * the pool's threads named as documented, and stop closing the port (twice is a no-op).
 */
class NettyTransportTest {

    private static GpuExtender extender() {
        return new GpuExtender(Ledger.create(TestSupport.inventory().rules(), TestSupport.inventory().nodes()),
                PlacementConfig.defaults(), new DemoCluster());
    }

    /** A status line, headers (lower-case names) and body read from a socket. */
    record Answer(int status, Map<String, String> headers, String body) {
    }

    private static String line(InputStream in) throws IOException {
        StringBuilder b = new StringBuilder();
        int c;
        while ((c = in.read()) >= 0 && c != '\n') {
            b.append((char) c);
        }
        if (c < 0 && b.length() == 0) {
            throw new IOException("connection closed");
        }
        return b.toString().stripTrailing();
    }

    private static Answer read(InputStream in) throws IOException {
        String status = line(in);
        assertTrue(status.startsWith("HTTP/1.1 "), status);
        Map<String, String> headers = new LinkedHashMap<>();
        for (String h = line(in); !h.isEmpty(); h = line(in)) {
            int colon = h.indexOf(':');
            headers.put(h.substring(0, colon).trim().toLowerCase(Locale.ROOT), h.substring(colon + 1).trim());
        }
        int length = Integer.parseInt(headers.getOrDefault("content-length", "0"));
        byte[] body = in.readNBytes(length);
        return new Answer(Integer.parseInt(status.substring(9, 12)), headers, new String(body, StandardCharsets.UTF_8));
    }

    private static void post(OutputStream out, String path, byte[] body, String extraHeaders) throws IOException {
        out.write(("POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + body.length
                + "\r\n" + extraHeaders + "\r\n").getBytes(StandardCharsets.US_ASCII));
        out.write(body);
        out.flush();
    }

    @Test
    void oneConnectionServesManyRequestsAndServesOnAfterA413() throws Exception {
        ExtenderServer server = ExtenderServer.builder(extender()).port(0).urlPrefix("/qgpu").maxBodyBytes(4096).threads(1)
                .build().start();
        try (Socket s = new Socket()) {
            s.connect(server.address(), 5000);
            s.setSoTimeout(10_000);
            InputStream in = new BufferedInputStream(s.getInputStream());
            OutputStream out = s.getOutputStream();
            byte[] filter = TestSupport.payload("filter-names-infer.json");
            for (int i = 0; i < 3; i++) {
                post(out, "/qgpu/filter", filter, "");
                Answer a = read(in);
                assertEquals(200, a.status(), a.body());
                assertEquals("application/json", a.headers().get("content-type"));
                assertTrue(TestSupport.tree(a.body()).has("NodeNames"), a.body());
            }
            // a body over the limit, declared: 413 with the extender's JSON, and the connection serves on
            byte[] big = new byte[10_000];
            java.util.Arrays.fill(big, (byte) ' ');
            post(out, "/qgpu/filter", big, "");
            Answer tooLarge = read(in);
            assertEquals(413, tooLarge.status(), tooLarge.body());
            assertTrue(TestSupport.tree(tooLarge.body()).get("Error").asText()
                    .contains("request body of 10000 bytes is over the limit of 4096 bytes"), tooLarge.body());
            post(out, "/qgpu/filter", filter, "");
            Answer after = read(in);
            assertEquals(200, after.status(), after.body());
            // HEAD: the length, no body; then the connection still serves
            out.write("HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            String status = line(in);
            assertTrue(status.startsWith("HTTP/1.1 200"), status);
            Map<String, String> headers = new LinkedHashMap<>();
            for (String h = line(in); !h.isEmpty(); h = line(in)) {
                headers.put(h.substring(0, h.indexOf(':')).toLowerCase(Locale.ROOT), h.substring(h.indexOf(':') + 1).trim());
            }
            assertEquals("3", headers.get("content-length"), headers.toString());
            post(out, "/qgpu/prioritize", filter, "");
            assertEquals(200, read(in).status());
        } finally {
            server.stop();
        }
    }

    /**
     * An extender whose bind waits (as on a slow API server) until {@code release} opens or
     * {@code waitMillis} pass, and whose filter answers at once; each call is logged in order.
     */
    private static final class SlowBind implements Extender {
        final java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        final java.util.concurrent.CountDownLatch bindStarted = new java.util.concurrent.CountDownLatch(1);
        final List<String> log = new java.util.concurrent.CopyOnWriteArrayList<>();
        final List<Thread> binders = new java.util.concurrent.CopyOnWriteArrayList<>();
        final long waitMillis;

        SlowBind(long waitMillis) {
            this.waitMillis = waitMillis;
        }

        @Override
        public ExtenderProtocol.FilterResult filter(ExtenderRequests.Args args) {
            log.add("filter");
            release.countDown();   // a filter served while the bind waits lets the bind go on at once
            return ExtenderProtocol.FilterResult.ofNames(args.nodeNames(), Map.of(), Map.of());
        }

        @Override
        public List<ExtenderProtocol.HostPriority> prioritize(ExtenderRequests.Args args) {
            throw new UnsupportedOperationException();
        }

        @Override
        public ExtenderProtocol.BindingResult bind(ExtenderProtocol.BindingArgs args) {
            log.add("bind " + Thread.currentThread().getName());
            binders.add(Thread.currentThread());
            bindStarted.countDown();
            try {
                release.await(waitMillis, java.util.concurrent.TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            log.add("bound");
            return ExtenderProtocol.BindingResult.ok();
        }
    }

    private static final byte[] BINDING = "{\"PodName\":\"p\",\"PodNamespace\":\"ns\",\"PodUID\":\"u\",\"Node\":\"n1\"}"
            .getBytes(StandardCharsets.UTF_8);

    @Test
    void aBindWaitingOnTheApiServerDoesNotHoldUpFilterOnTheSameEventLoop() throws Exception {
        // one event loop for every connection: a bind run on it would keep the filter waiting until the
        // bind's wait ran out (30 s, past the filter's 10 s read timeout)
        SlowBind ext = new SlowBind(30_000);
        ExtenderServer server = ExtenderServer.builder(ext).port(0).urlPrefix("/qgpu").threads(0).build().start();
        try (Socket binder = new Socket(); Socket scheduler = new Socket()) {
            binder.connect(server.address(), 5000);
            binder.setSoTimeout(10_000);
            scheduler.connect(server.address(), 5000);
            scheduler.setSoTimeout(10_000);
            post(binder.getOutputStream(), "/qgpu/bind", BINDING, "");
            assertTrue(ext.bindStarted.await(10, java.util.concurrent.TimeUnit.SECONDS));
            post(scheduler.getOutputStream(), "/qgpu/filter", TestSupport.payload("filter-names-infer.json"), "");
            Answer filtered = read(new BufferedInputStream(scheduler.getInputStream()));   // while the bind waits
            assertEquals(200, filtered.status(), filtered.body());
            Answer bound = read(new BufferedInputStream(binder.getInputStream()));
            assertEquals(200, bound.status(), bound.body());
            assertEquals("bind qgpu-extender-worker-1", ext.log.get(0), ext.log.toString());
            assertEquals(List.of("filter", "bound"), ext.log.subList(1, 3), "the filter was served while the bind waited");
        } finally {
            server.stop();
        }
        for (Thread t : ext.binders) {
            t.join(5_000);   // the pool has terminated; its thread returns from run() right after
            assertTrue(!t.isAlive(), "stop ended the worker " + t.getName());
        }
    }

    @Test
    void aRequestPipelinedBehindABindIsServedAndAnsweredAfterIt() throws Exception {
        // the bind waits 500 ms unless the filter behind it is served meanwhile (which would answer the
        // filter first: out of order on the connection)
        SlowBind ext = new SlowBind(500);
        ExtenderServer server = ExtenderServer.builder(ext).port(0).urlPrefix("/qgpu").threads(0).build().start();
        try (Socket s = new Socket()) {
            s.connect(server.address(), 5000);
            s.setSoTimeout(10_000);
            byte[] filter = TestSupport.payload("filter-names-infer.json");
            java.io.ByteArrayOutputStream both = new java.io.ByteArrayOutputStream();
            post(both, "/qgpu/bind", BINDING, "");
            post(both, "/qgpu/filter", filter, "");
            post(both, "/qgpu/bind", BINDING, "");
            s.getOutputStream().write(both.toByteArray());   // three requests in one write
            s.getOutputStream().flush();
            InputStream in = new BufferedInputStream(s.getInputStream());
            Answer first = read(in);
            Answer second = read(in);
            Answer third = read(in);
            assertEquals("{\"Error\":\"\"}", first.body(), "the bind's answer first");
            assertTrue(TestSupport.tree(second.body()).has("NodeNames"), second.body());
            assertEquals("{\"Error\":\"\"}", third.body());
            assertEquals(List.of("bound", "filter"), ext.log.subList(1, 3), ext.log.toString());
            post(s.getOutputStream(), "/qgpu/filter", filter, "");   // and the connection reads again
            assertEquals(200, read(in).status());
        } finally {
            server.stop();
        }
    }

    @Test
    void connectionCloseIsHonouredAndGarbageIsRefusedWith400() throws Exception {
        ExtenderServer server = ExtenderServer.builder(extender()).port(0).threads(0).build().start();
        try {
            try (Socket s = new Socket()) {
                s.connect(server.address(), 5000);
                s.setSoTimeout(10_000);
                InputStream in = new BufferedInputStream(s.getInputStream());
                post(s.getOutputStream(), "/filter", TestSupport.payload("filter-names-infer.json"), "Connection: close\r\n");
                Answer a = read(in);
                assertEquals(200, a.status(), a.body());
                assertEquals("close", a.headers().get("connection"));
                assertEquals(-1, in.read(), "the server closed the connection after the answer");
            }
            try (Socket s = new Socket()) {
                s.connect(server.address(), 5000);
                s.setSoTimeout(10_000);
                InputStream in = new BufferedInputStream(s.getInputStream());
                s.getOutputStream().write("\u0001\u0002 not http at all\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
                s.getOutputStream().flush();
                Answer a = read(in);
                assertEquals(400, a.status(), a.body());
                assertTrue(TestSupport.tree(a.body()).get("Error").asText().startsWith("malformed HTTP request"), a.body());
                assertEquals(-1, in.read(), "closed after the 400");
            }
            // the server serves on
            assertEquals(200, TestSupport.post(server.baseUrl() + "/filter", TestSupport.payload("filter-names-infer.json")).statusCode());
        } finally {
            server.stop();
        }
    }

    @Test
    void aPoolOfThreadsServesTheConnectionsAndStopClosesThePort() throws Exception {
        GpuExtender real = extender();
        Set<String> handledOn = ConcurrentHashMap.newKeySet();
        Extender recording = TestSupport.recordingFilterThreads(real, handledOn);
        ExtenderServer server = ExtenderServer.builder(recording).port(0).threads(2).build().start();
        InetSocketAddress address = server.address();
        List<Socket> sockets = new java.util.ArrayList<>();
        try {
            for (int i = 0; i < 4; i++) {   // connections go to the loops in turn
                Socket s = new Socket();
                s.connect(address, 5000);
                s.setSoTimeout(10_000);
                sockets.add(s);
                post(s.getOutputStream(), "/filter", TestSupport.payload("filter-names-infer.json"), "");
                assertEquals(200, read(new BufferedInputStream(s.getInputStream())).status());
            }
            assertEquals(Set.of("qgpu-extender-1", "qgpu-extender-2"), handledOn);
        } finally {
            for (Socket s : sockets) {
                s.close();
            }
            server.stop();
        }
        server.stop();   // a second stop does nothing
        assertThrows(ConnectException.class, () -> {
            try (Socket s = new Socket()) {
                s.connect(address, 2000);
            }
        });
        assertThrows(IllegalStateException.class, server::port);
    }

    /**
     * {@code Expect: 100-continue}: a body within the limit is asked for with {@code 100 Continue} and answered;
     * a declared body over the limit is refused at once with the extender's 413 and its JSON (the client sends
     * no body), and the connection serves on.
     */
    @Test
    void expectContinueIsAnsweredAndAnOversizeDeclarationRefusedBeforeTheBody() throws Exception {
        ExtenderServer server = ExtenderServer.builder(extender()).port(0).maxBodyBytes(4096).threads(0).build().start();
        try (Socket s = new Socket()) {
            s.connect(server.address(), 5000);
            s.setSoTimeout(10_000);
            InputStream in = new BufferedInputStream(s.getInputStream());
            OutputStream out = s.getOutputStream();
            out.write(("POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n"
                    + "Expect: 100-continue\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            out.flush();
            Answer refused = read(in);
            assertEquals(413, refused.status(), refused.body());
            assertTrue(TestSupport.tree(refused.body()).get("Error").asText()
                    .contains("request body of 100000 bytes is over the limit of 4096 bytes"), refused.body());
            byte[] filter = TestSupport.payload("filter-names-infer.json");
            out.write(("POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + filter.length
                    + "\r\nExpect: 100-continue\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            out.flush();
            assertEquals("HTTP/1.1 100 Continue", line(in));
            assertEquals("", line(in));
            out.write(filter);
            out.flush();
            Answer ok = read(in);
            assertEquals(200, ok.status(), ok.body());
            assertTrue(TestSupport.tree(ok.body()).has("NodeNames"), ok.body());
        } finally {
            server.stop();
        }
    }

    /**
     * Another HTTP stack than the JDK's: curl (libcurl), where installed, posts the recorded kube-scheduler
     * filter payload, asks {@code HEAD /healthz}, and sends a body over the limit, which curl announces with
     * {@code Expect: 100-continue} past 1 MiB: 200 with the names, 200 with no body, 413 with the JSON error.
     */
    @Test
    void curlIsAnsweredAsTheJdkClientIs() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(onPath("curl"), "curl is not installed");
        ExtenderServer server = ExtenderServer.builder(extender()).port(0).urlPrefix("/qgpu").maxBodyBytes(1 << 20).threads(1)
                .build().start();
        java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("qgpu-curl");
        try {
            java.nio.file.Path filter = dir.resolve("filter.json");
            java.nio.file.Files.write(filter, TestSupport.payload("filter-names-infer.json"));
            String ok = curl("-sS", "-H", "Content-Type: application/json", "--data-binary", "@" + filter,
                    "-w", "\n%{http_code}", server.baseUrl() + "/filter");
            assertTrue(ok.endsWith("\n200"), ok);
            assertTrue(TestSupport.tree(ok.substring(0, ok.lastIndexOf('\n'))).has("NodeNames"), ok);
            String head = curl("-sS", "-I", "http://127.0.0.1:" + server.port() + "/healthz");
            assertTrue(head.startsWith("HTTP/1.1 200"), head);
            java.nio.file.Path big = dir.resolve("big.json");
            byte[] bytes = new byte[3 << 20];
            java.util.Arrays.fill(bytes, (byte) ' ');
            java.nio.file.Files.write(big, bytes);
            String tooLarge = curl("-sS", "-H", "Content-Type: application/json", "--data-binary", "@" + big,
                    "-w", "\n%{http_code}", server.baseUrl() + "/filter");
            assertTrue(tooLarge.endsWith("\n413"), tooLarge);
            assertTrue(tooLarge.contains("request body of " + bytes.length + " bytes is over the limit"), tooLarge);
        } finally {
            server.stop();
            try (var files = java.nio.file.Files.walk(dir)) {
                files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
    }

    private static boolean onPath(String command) {
        for (String d : System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
            if (java.nio.file.Files.isExecutable(java.nio.file.Path.of(d, command))) {
                return true;
            }
        }
        return false;
    }

    private static String curl(String... args) throws Exception {
        List<String> cmd = new java.util.ArrayList<>(List.of("curl", "--max-time", "20"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(30, java.util.concurrent.TimeUnit.SECONDS), "curl did not end");
        assertEquals(0, p.exitValue(), out);
        return out;
    }
}
