package io.qgpu.samples.inference;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.LockSupport;

/**
 * Sends the demo's online requests to the server with {@link HttpClient}, each at its planned time
 * (open loop, so a slow answer does not delay the next request), and measures each latency from the
 * planned send time to the answer.
 */
final class OpenLoopClient {

    /** Latencies in nanoseconds, and the HTTP status of each answer. */
    record Outcome(long[] latencies, int[] statuses) {
    }

    static Outcome run(URI uri, DemoConfig c) {
        HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(5)).build();
        HttpRequest request = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(30))
                .POST(HttpRequest.BodyPublishers.ofString("{\"image\":\"...\"}")).build();
        int n = c.requests();
        long[] latencies = new long[n];
        int[] statuses = new int[n];
        List<CompletableFuture<Void>> pending = new ArrayList<>(n);
        long next = System.nanoTime();
        int k = 0;
        for (int b = 0; b < c.bursts(); b++) {
            for (int i = 0; i < c.burstSize(); i++, k++) {
                parkUntil(next);
                long planned = next;
                int idx = k;
                pending.add(client.sendAsync(request, HttpResponse.BodyHandlers.discarding())
                        .thenAccept(r -> {
                            latencies[idx] = System.nanoTime() - planned;
                            statuses[idx] = r.statusCode();
                        }));
                next += c.requestInterval().toNanos();
            }
            next += c.pause().toNanos();
        }
        CompletableFuture.allOf(pending.toArray(new CompletableFuture<?>[0])).join();
        return new Outcome(latencies, statuses);
    }

    private static void parkUntil(long deadline) {
        for (long left = deadline - System.nanoTime(); left > 0; left = deadline - System.nanoTime()) {
            LockSupport.parkNanos(left);
        }
    }
}
