package io.qgpu.kubernetes.allocator;

import static io.qgpu.kubernetes.allocator.Reviews.claim;
import static io.qgpu.kubernetes.allocator.Reviews.create;
import static io.qgpu.kubernetes.allocator.Reviews.firstAvailable;
import static io.qgpu.kubernetes.allocator.Reviews.gatesAfter;
import static io.qgpu.kubernetes.allocator.Reviews.pod;
import static io.qgpu.kubernetes.allocator.Reviews.read;
import static io.qgpu.kubernetes.allocator.Reviews.review;
import static io.qgpu.kubernetes.allocator.Reviews.spec;
import static io.qgpu.kubernetes.allocator.Reviews.template;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.qgpu.kubernetes.node.dra.DraNames;
import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The webhook served over HTTPS on an ephemeral port, called by the JDK's HTTP client trusting the test certificate
 * (src/test/resources/tls, made as its README says): the reviews' answers, the HTTP errors, the TLS handshake, the PEM
 * forms of the key, the refused TLS files, and closing.
 */
class WebhookServerTest {
    static final String GATE = DraNames.SCHEDULING_GATE;

    final Reviews.Claims claims = new Reviews.Claims().add(claim("gpu", DraNames.DEVICE_CLASS)).add(claim("nic", "nic.example.com"))
            .add(firstAvailable("either", "big-gpu.example.com", DraNames.DEVICE_CLASS)).add(template("share", DraNames.DEVICE_CLASS));
    final AdmissionWebhook webhook = new AdmissionWebhook(new ClaimScope(claims, List.of(DraNames.DEVICE_CLASS)));
    WebhookServer server;
    HttpClient client;

    static Path tls(String file) {
        try {
            return Path.of(WebhookServerTest.class.getResource("/tls/" + file).toURI());
        } catch (java.net.URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A client that trusts the certificate {@code cert} (and nothing else). */
    static HttpClient trusting(String cert) throws Exception {
        KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
        trust.load(null, null);
        try (InputStream in = Files.newInputStream(tls(cert))) {
            trust.setCertificateEntry("webhook", CertificateFactory.getInstance("X.509").generateCertificate(in));
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(trust);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, tmf.getTrustManagers(), null);
        return HttpClient.newBuilder().sslContext(ctx).version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(10)).build();
    }

    static WebhookServer start(String cert, String key, AdmissionWebhook webhook) throws IOException {
        return WebhookServer.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), tls(cert), tls(key), webhook);
    }

    @BeforeEach
    void startServer() throws Exception {
        server = start("rsa.crt", "rsa.key", webhook);
        client = trusting("rsa.crt");
    }

    @AfterEach
    void stopServer() {
        server.close();
    }

    URI uri(WebhookServer s, String path) {
        return URI.create("https://127.0.0.1:" + s.port() + path);
    }

    HttpResponse<String> post(String path, byte[] body) throws Exception {
        return client.send(HttpRequest.newBuilder(uri(server, path)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    HttpResponse<String> get(String path) throws Exception {
        return client.send(HttpRequest.newBuilder(uri(server, path)).GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    /** The pod's gates after the answer over HTTPS (checked 200, allowed, the uid echoed). */
    JsonNode gatesAfterReview(String pod) throws Exception {
        HttpResponse<String> r = post(WebhookServer.MUTATE_PATH, create(pod));
        assertEquals(200, r.statusCode(), r.body());
        assertEquals("application/json", r.headers().firstValue("Content-Type").orElse(""));
        JsonNode answer = read(r.body().getBytes(StandardCharsets.UTF_8));
        assertEquals("uid-1", answer.path("response").path("uid").asText());
        assertTrue(answer.path("response").path("allowed").asBoolean(), r.body());
        return gatesAfter(pod, answer);
    }

    @Test
    void reviewsOverHttps() throws Exception {
        String gate = "{\"name\":\"" + GATE + "\"}";
        String quota = "{\"name\":\"example.com/quota\"}";
        Map<String, String> cases = new LinkedHashMap<>(); // the pod's spec -> its gates after the review
        cases.put(spec("[{\"name\":\"c\",\"resourceClaimName\":\"gpu\"}]", null), "[" + gate + "]");
        cases.put(spec("[{\"name\":\"c\",\"resourceClaimTemplateName\":\"share\"}]", null), "[" + gate + "]");
        cases.put(spec("[{\"name\":\"c\",\"resourceClaimName\":\"either\"}]", null), "[" + gate + "]");
        cases.put(spec("[{\"name\":\"c\",\"resourceClaimName\":\"later\"}]", null), "[" + gate + "]");
        cases.put(spec("[{\"name\":\"c\",\"resourceClaimName\":\"nic\"}]", null), "null");
        cases.put(spec(null, null), "null");
        cases.put(spec("[{\"name\":\"c\",\"resourceClaimName\":\"gpu\"}]", "\"schedulingGates\":[" + gate + "]"), "[" + gate + "]");
        cases.put(spec("[{\"name\":\"c\",\"resourceClaimName\":\"gpu\"}]", "\"schedulingGates\":[" + quota + "]"), "[" + quota + "," + gate + "]");
        for (Map.Entry<String, String> c : cases.entrySet()) {
            JsonNode gates = gatesAfterReview(pod(c.getKey()));
            assertEquals(c.getValue(), gates.isMissingNode() ? "null" : gates.toString(), c.getKey());
        }
    }

    @Test
    void notACreateAndMalformedReviewsAreAnsweredAllowed() throws Exception {
        HttpResponse<String> update = post(WebhookServer.MUTATE_PATH, review("u-2", "UPDATE", pod(spec("[{\"name\":\"c\",\"resourceClaimName\":\"gpu\"}]", null))));
        assertEquals(200, update.statusCode());
        JsonNode a = read(update.body().getBytes(StandardCharsets.UTF_8));
        assertEquals("not a Pod CREATE (v1 Pod UPDATE): allowed unchanged", a.path("response").path("status").path("message").asText());
        assertTrue(a.path("response").path("allowed").asBoolean() && a.path("response").get("patch") == null, update.body());

        HttpResponse<String> noPod = post(WebhookServer.MUTATE_PATH, ("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                + "\"request\":{\"uid\":\"u-3\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},\"operation\":\"CREATE\"}}")
                .getBytes(StandardCharsets.UTF_8));
        assertEquals(200, noPod.statusCode());
        assertTrue(noPod.body().contains("\"allowed\":true") && noPod.body().contains("malformed review: request.object is not a Pod"),
                noPod.body());
    }

    @Test
    void aBodyThatIsNotAReviewIs400() throws Exception {
        HttpResponse<String> noUid = post(WebhookServer.MUTATE_PATH, "{\"apiVersion\":\"admission.k8s.io/v1\",\"request\":{}}"
                .getBytes(StandardCharsets.UTF_8));
        assertEquals(400, noUid.statusCode());
        assertEquals("not an AdmissionReview request: no request.uid\n", noUid.body());
        HttpResponse<String> notJson = post(WebhookServer.MUTATE_PATH, "<pod/>".getBytes(StandardCharsets.UTF_8));
        assertEquals(400, notJson.statusCode());
        assertTrue(notJson.body().startsWith("the body is not JSON: "), notJson.body());
    }

    @Test
    void otherPathsMethodsAndSizes() throws Exception {
        HttpResponse<String> health = get(WebhookServer.HEALTH_PATH);
        assertEquals(200, health.statusCode());
        assertEquals("ok\n", health.body());
        assertEquals(404, get("/validate").statusCode());
        HttpResponse<String> getMutate = get(WebhookServer.MUTATE_PATH);
        assertEquals(405, getMutate.statusCode());
        assertEquals("POST", getMutate.headers().firstValue("Allow").orElse(""));
        assertEquals(405, post(WebhookServer.HEALTH_PATH, new byte[1]).statusCode());
        HttpResponse<String> big = post(WebhookServer.MUTATE_PATH, new byte[WebhookServer.MAX_BODY_BYTES + 1]);
        assertEquals(413, big.statusCode());
        assertEquals("the body is over " + WebhookServer.MAX_BODY_BYTES + " bytes\n", big.body());
        assertEquals(200, get(WebhookServer.HEALTH_PATH).statusCode(), "still serving");
    }

    @Test
    void aClientThatDoesNotTrustTheCertificateFailsTheHandshake() throws Exception {
        HttpClient stranger = trusting("ec.crt");
        assertThrows(SSLHandshakeException.class, () -> stranger.send(HttpRequest.newBuilder(uri(server, WebhookServer.HEALTH_PATH)).GET()
                .build(), HttpResponse.BodyHandlers.ofString()));
    }

    @Test
    void theKeyMayBePkcs1OrPkcs8RsaOrEc() throws Exception {
        for (String[] pair : new String[][] {{"rsa.crt", "rsa-pkcs1.key"}, {"ec.crt", "ec.key"}, {"ec.crt", "ec-pkcs8.key"}}) {
            try (WebhookServer other = start(pair[0], pair[1], webhook)) {
                HttpResponse<String> r = trusting(pair[0]).send(HttpRequest.newBuilder(uri(other, WebhookServer.HEALTH_PATH)).GET().build(),
                        HttpResponse.BodyHandlers.ofString());
                assertEquals(200, r.statusCode(), pair[1]);
            }
        }
    }

    @Test
    void tlsFilesThatCannotServeAreRefusedByFlag(@TempDir Path dir) throws Exception {
        Path text = Files.writeString(dir.resolve("notes.txt"), "not PEM\n");
        assertEquals("--tls-key " + tls("other-rsa.key") + ": not the private key of --tls-cert " + tls("rsa.crt") + " (CN=localhost)",
                refusal(tls("rsa.crt"), tls("other-rsa.key")));
        assertTrue(refusal(tls("rsa.crt"), tls("ec.key")).startsWith("--tls-key " + tls("ec.key") + ": not a PEM RSA private key ("),
                refusal(tls("rsa.crt"), tls("ec.key")));
        assertTrue(refusal(tls("rsa.crt"), text).startsWith("--tls-key " + text + ": not a PEM RSA private key ("), refusal(tls("rsa.crt"), text));
        assertTrue(refusal(text, tls("rsa.key")).startsWith("--tls-cert " + text + ": not a PEM certificate ("), refusal(text, tls("rsa.key")));
        assertTrue(refusal(tls("rsa.key"), tls("rsa.key")).startsWith("--tls-cert " + tls("rsa.key") + ": "), refusal(tls("rsa.key"), tls("rsa.key")));
        assertEquals("--tls-cert " + dir.resolve("gone.crt") + ": no such file", refusal(dir.resolve("gone.crt"), tls("rsa.key")));
        assertEquals("--tls-key " + dir + ": not a file", refusal(tls("rsa.crt"), dir));
    }

    static String refusal(Path cert, Path key) {
        return assertThrows(IllegalArgumentException.class, () -> WebhookServer.sslContext(cert, key)).getMessage();
    }

    @Test
    void closingStopsServingAndTwiceIsHarmless() throws Exception {
        URI health = uri(server, WebhookServer.HEALTH_PATH);
        assertEquals(200, get(WebhookServer.HEALTH_PATH).statusCode());
        server.close();
        server.close();
        HttpClient fresh = trusting("rsa.crt");
        assertThrows(ConnectException.class, () -> fresh.send(HttpRequest.newBuilder(health).GET().build(), HttpResponse.BodyHandlers.ofString()));
    }
}
