package io.qgpu.samples.djl;

import ai.djl.Model;
import ai.djl.inference.Predictor;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.qgpu.djl.QgpuDjl;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The online tenant: an HTTP inference server on loopback; {@code POST /infer} predicts one batch of rows with
 * the real model, under a lease of the online tenant when a {@link QgpuDjl} is given. One predictor per
 * server thread (DJL's predictors are for one thread at a time).
 *
 * <p>Thread safety: thread-safe.
 */
final class OnlineServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(OnlineServer.class);

    private final HttpServer server;
    private final ExecutorService pool;
    private final Queue<Long> handlerNanos = new ConcurrentLinkedQueue<>();
    private final ThreadLocal<Predictor<float[][], float[][]>> predictors;
    private final Queue<Predictor<float[][], float[][]>> all = new ConcurrentLinkedQueue<>();

    OnlineServer(Model model, int requestRows, QgpuDjl online) throws IOException {
        this.predictors = ThreadLocal.withInitial(() -> {
            Predictor<float[][], float[][]> p = online == null ? model.newPredictor(new Rows())
                    : online.newPredictor(model, new Rows());
            all.add(p);
            return p;
        });
        this.server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 128);
        this.pool = Executors.newFixedThreadPool(8, r -> {
            Thread t = new Thread(r, "online-http");
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(pool);
        float[][] rows = Rows.make(requestRows, 256, 7);
        server.createContext("/infer", exchange -> {
            try {
                handle(exchange, rows);
            } catch (Exception e) {
                LOG.error("request failed", e);
                exchange.sendResponseHeaders(500, -1);
            } finally {
                exchange.close();
            }
        });
        server.start();
    }

    private void handle(HttpExchange exchange, float[][] rows) throws Exception {
        exchange.getRequestBody().readAllBytes();
        long t0 = System.nanoTime();
        float[][] y = predictors.get().predict(rows);
        handlerNanos.add(System.nanoTime() - t0);
        byte[] body = String.format(Locale.ROOT, "{\"y0\":%.6f}%n", y[0][0]).getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", "application/json");
        exchange.sendResponseHeaders(200, body.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
        }
    }

    /** Time in the request handler (the prediction, gate wait included), per request. */
    List<Long> handlerNanos() {
        return List.copyOf(handlerNanos);
    }

    URI uri() {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/infer");
    }

    @Override
    public void close() {
        server.stop(0);
        pool.shutdownNow();
        all.forEach(Predictor::close);
    }
}
