package io.qgpu.samples.inference;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.qgpu.core.gate.Gate;
import io.qgpu.core.gate.Lease;
import io.qgpu.core.gate.Tenant;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An inference server on loopback: {@code POST /infer} runs one "model forward pass" (a kernel on the
 * shared {@link FakeGpu}), inside a lease of the online tenant when a gate is given.
 *
 * <p>Thread safety: thread-safe; requests are served on a pool of threads.
 */
final class InferenceServer implements AutoCloseable {
    private final HttpServer server;
    private final ExecutorService pool;
    private static final Logger LOG = LoggerFactory.getLogger(InferenceServer.class);
    private final Queue<long[]> timings = new ConcurrentLinkedQueue<>();

    InferenceServer(FakeGpu gpu, long kernelNanos, Gate gate, Tenant online) throws IOException {
        this.server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 128);
        this.pool = Executors.newFixedThreadPool(32, r -> {
            Thread t = new Thread(r, "infer-http");
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(pool);
        server.createContext("/infer", exchange -> {
            try {
                handle(exchange, gpu, kernelNanos, gate, online);
            } catch (RuntimeException e) {
                LOG.error("request failed", e);
                exchange.sendResponseHeaders(500, -1);
            } finally {
                exchange.close();
            }
        });
        server.start();
    }

    /** One request: a forward pass on the GPU, inside a lease of the online tenant when there is a gate. */
    private void handle(HttpExchange exchange, FakeGpu gpu, long kernelNanos, Gate gate, Tenant online)
            throws IOException {
        exchange.getRequestBody().readAllBytes();
        long t0 = System.nanoTime();
        long t1 = t0;
        if (gate == null) {
            gpu.run(kernelNanos);
        } else {
            try (Lease lease = gate.acquire(online)) {
                t1 = System.nanoTime();
                gpu.run(kernelNanos);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                exchange.sendResponseHeaders(503, -1);
                return;
            }
        }
        timings.add(new long[] {t1 - t0, System.nanoTime() - t0});
        byte[] body = "{\"label\":\"cat\"}\n".getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", "application/json");
        exchange.sendResponseHeaders(200, body.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
        }
    }

    /** Per request: {time waiting at the gate, time in the handler} in nanoseconds. */
    List<long[]> timings() {
        return List.copyOf(timings);
    }

    URI uri() {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/infer");
    }

    @Override
    public void close() {
        server.stop(0);
        pool.shutdownNow();
    }
}
