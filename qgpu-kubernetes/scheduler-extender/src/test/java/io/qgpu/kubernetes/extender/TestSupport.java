package io.qgpu.kubernetes.extender;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.api.model.Pod;
import io.qgpu.json.Inventory;
import io.qgpu.json.QgpuJson;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/** Shared helpers: test resources, HTTP calls, JSON. */
final class TestSupport {
    static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private TestSupport() {
    }

    static byte[] resource(String name) {
        try (InputStream in = TestSupport.class.getResourceAsStream("/" + name)) {
            if (in == null) {
                throw new IllegalArgumentException("no test resource " + name);
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static String text(String name) {
        return new String(resource(name), StandardCharsets.UTF_8);
    }

    static byte[] payload(String name) {
        return resource("payloads/" + name);
    }

    static Inventory inventory() {
        return QgpuJson.readInventory(text("inventory.json"));
    }

    static Pod pod(String name) {
        return ExtenderRequests.readKube(text("payloads/" + name), Pod.class);
    }

    static io.fabric8.kubernetes.api.model.Node node(String name) {
        return ExtenderRequests.readKube(text("payloads/node-" + name + ".json"), io.fabric8.kubernetes.api.model.Node.class);
    }

    static JsonNode tree(byte[] json) {
        try {
            return JSON.readTree(json);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static JsonNode tree(String json) {
        return tree(json.getBytes(StandardCharsets.UTF_8));
    }

    static HttpResponse<String> post(String url, byte[] body) {
        return send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(body)).build());
    }

    static HttpResponse<String> send(HttpRequest request) {
        try {
            return HTTP.send(request, HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** {@code real}, noting the name of each thread that handles a filter in {@code handledOn}. */
    static Extender recordingFilterThreads(Extender real, java.util.Set<String> handledOn) {
        return new Extender() {
            @Override
            public ExtenderProtocol.FilterResult filter(ExtenderRequests.Args args) {
                handledOn.add(Thread.currentThread().getName());
                return real.filter(args);
            }

            @Override
            public java.util.List<ExtenderProtocol.HostPriority> prioritize(ExtenderRequests.Args args) {
                return real.prioritize(args);
            }

            @Override
            public ExtenderProtocol.BindingResult bind(ExtenderProtocol.BindingArgs args) {
                return real.bind(args);
            }
        };
    }
}
