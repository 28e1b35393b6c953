package io.qgpu.kubernetes.allocator;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import io.fabric8.kubernetes.client.internal.CertUtils;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.cert.CertificateExpiredException;
import java.security.cert.CertificateFactory;
import java.security.cert.CertificateNotYetValidException;
import java.security.cert.X509Certificate;
import java.util.Collection;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The HTTPS server of the {@link AdmissionWebhook}, on the JDK's {@link HttpsServer}: {@code POST /mutate} takes an
 * AdmissionReview and answers 200 with the review's answer (400 with a line of text for a body that is not a review:
 * {@link AdmissionWebhook.BadReviewException}); {@code GET /healthz} answers 200 {@code ok} (the Deployment's readiness
 * and liveness probes); another path is 404, another method 405, a body over {@value #MAX_BODY_BYTES} bytes 413, a bug
 * 500. The certificate chain and the private key are PEM files ({@code --tls-cert}, {@code --tls-key}); the key may be
 * PKCS#1 or PKCS#8 RSA, or EC, read by fabric8's {@link CertUtils}. They are read once, at start: a renewed
 * certificate is served after a restart.
 *
 * <p>Requests are handled by {@value #THREADS} threads with a queue of {@value #QUEUE} requests; beyond that the
 * server's own dispatcher thread handles a request itself, so that it accepts no more connections until then (a bound
 * on memory and threads; kube-apiserver gives up on a webhook after its timeout and, with failure policy Ignore, admits
 * the pod).
 *
 * <pre>{@code
 * try (WebhookServer server = WebhookServer.start(new InetSocketAddress(8443), Path.of("/tls/tls.crt"),
 *         Path.of("/tls/tls.key"), webhook)) {
 *     server.port();   // 8443 (the bound port with port 0)
 * }
 * }</pre>
 *
 * <p>Thread safety: thread-safe; {@link #close} may be called from any thread, more than once.
 */
public final class WebhookServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(WebhookServer.class);

    /** The admission path: the MutatingWebhookConfiguration's {@code clientConfig.service.path}. */
    public static final String MUTATE_PATH = "/mutate";
    /** The health path: 200 while the server serves. */
    public static final String HEALTH_PATH = "/healthz";
    /** The largest AdmissionReview read: a pod (at most 1.5 MiB in etcd) and the review around it fit well within. */
    public static final int MAX_BODY_BYTES = 4 << 20;
    /** The request threads. */
    public static final int THREADS = 4;
    /** The requests that may wait for a thread. */
    public static final int QUEUE = 64;

    /** The in-memory key store's password: it protects nothing (the key comes from a file and stays in this process). */
    private static final char[] STORE_PASSWORD = "qgpu-webhook".toCharArray();

    private final HttpsServer server;
    private final ThreadPoolExecutor pool;
    private final AdmissionWebhook webhook;
    private final AtomicBoolean closed = new AtomicBoolean();

    private WebhookServer(HttpsServer server, ThreadPoolExecutor pool, AdmissionWebhook webhook) {
        this.server = server;
        this.pool = pool;
        this.webhook = webhook;
    }

    /**
     * Reads the certificate and key, binds the address (port 0: any free port) and starts serving.
     *
     * @throws IllegalArgumentException one line naming {@code --tls-cert} or {@code --tls-key} and the file: not PEM,
     *                                  not a certificate or key, a key of another certificate, an expired certificate
     * @throws IOException              the address cannot be bound
     */
    public static WebhookServer start(InetSocketAddress address, Path tlsCert, Path tlsKey, AdmissionWebhook webhook)
            throws IOException {
        Objects.requireNonNull(webhook, "webhook");
        SSLContext tls = sslContext(tlsCert, tlsKey);
        HttpsServer s = HttpsServer.create(address, 128);
        s.setHttpsConfigurator(new HttpsConfigurator(tls));
        AtomicInteger n = new AtomicInteger();
        ThreadPoolExecutor pool = new ThreadPoolExecutor(THREADS, THREADS, 0, TimeUnit.MILLISECONDS, new ArrayBlockingQueue<>(QUEUE),
                r -> {
                    Thread t = new Thread(r, "qgpu-webhook-" + n.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                }, new ThreadPoolExecutor.CallerRunsPolicy());
        s.setExecutor(pool);
        WebhookServer w = new WebhookServer(s, pool, webhook);
        s.createContext("/", w::handle);
        s.start();
        LOG.info("admission webhook serving https://{}:{}{} ({} {})", address.getHostString(), w.port(), MUTATE_PATH, tlsCert, tlsKey);
        return w;
    }

    /**
     * A TLS server context from PEM files: the certificate chain (the server's certificate first) and its private key.
     *
     * @throws IllegalArgumentException one line naming {@code --tls-cert} or {@code --tls-key} and the file
     */
    public static SSLContext sslContext(Path tlsCert, Path tlsKey) {
        String certFlag = "--tls-cert " + tlsCert;
        String keyFlag = "--tls-key " + tlsKey;
        byte[] chain = read("--tls-cert", tlsCert);
        byte[] key = read("--tls-key", tlsKey);
        X509Certificate leaf;
        try {
            Collection<? extends java.security.cert.Certificate> certs = CertificateFactory.getInstance("X.509")
                    .generateCertificates(new ByteArrayInputStream(chain));
            if (certs.isEmpty()) {
                throw new IllegalArgumentException(certFlag + ": holds no certificate (a PEM -----BEGIN CERTIFICATE----- block)");
            }
            leaf = (X509Certificate) certs.iterator().next();
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException(certFlag + ": not a PEM certificate (" + e.getMessage() + ")");
        }
        try {
            leaf.checkValidity();
        } catch (CertificateExpiredException e) {
            throw new IllegalArgumentException(certFlag + ": expired on " + leaf.getNotAfter().toInstant());
        } catch (CertificateNotYetValidException e) {
            throw new IllegalArgumentException(certFlag + ": not valid before " + leaf.getNotBefore().toInstant());
        }
        String algorithm = leaf.getPublicKey().getAlgorithm();
        if (!algorithm.equals("RSA") && !algorithm.equals("EC")) {
            throw new IllegalArgumentException(certFlag + ": has a " + algorithm + " key; an RSA or EC key is needed");
        }
        KeyStore store;
        try {
            store = CertUtils.createKeyStore(new ByteArrayInputStream(chain), new ByteArrayInputStream(key), algorithm,
                    STORE_PASSWORD, null, STORE_PASSWORD);
        } catch (IOException | GeneralSecurityException | RuntimeException e) {
            throw new IllegalArgumentException(keyFlag + ": not a PEM " + algorithm + " private key (" + e.getMessage() + ")");
        }
        try {
            PrivateKey privateKey = null;
            for (String alias : java.util.Collections.list(store.aliases())) {
                if (leaf.equals(store.getCertificate(alias)) && store.isKeyEntry(alias)) {
                    privateKey = (PrivateKey) store.getKey(alias, STORE_PASSWORD);
                }
            }
            if (privateKey == null || !matches(privateKey, leaf)) {
                throw new IllegalArgumentException(keyFlag + ": not the private key of " + certFlag + " ("
                        + leaf.getSubjectX500Principal().getName() + ")");
            }
            KeyManagerFactory keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            keys.init(store, STORE_PASSWORD);
            SSLContext tls = SSLContext.getInstance("TLS");
            tls.init(keys.getKeyManagers(), null, null);
            return tls;
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException(keyFlag + ": cannot be used with " + certFlag + " (" + e.getMessage() + ")");
        }
    }

    /** The bound port. */
    public int port() {
        return server.getAddress().getPort();
    }

    /**
     * Stops serving: closes the listener at once and waits up to five seconds for the reviews being answered. A second
     * call does nothing.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        server.stop(0);
        pool.shutdown();
        try {
            if (!pool.awaitTermination(5, TimeUnit.SECONDS)) {
                LOG.warn("admission webhook: requests still running 5 s after close");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        LOG.info("admission webhook stopped");
    }

    private void handle(HttpExchange ex) {
        String method = ex.getRequestMethod().toUpperCase(Locale.ROOT);
        String path = ex.getRequestURI().getPath();
        try (ex) {
            if (path.equals(HEALTH_PATH)) {
                if (!method.equals("GET") && !method.equals("HEAD")) {
                    ex.getResponseHeaders().set("Allow", "GET, HEAD");
                    text(ex, 405, "use GET or HEAD on " + HEALTH_PATH);
                } else {
                    text(ex, 200, "ok");
                }
            } else if (!path.equals(MUTATE_PATH)) {
                text(ex, 404, "no such path " + path + "; the webhook serves POST " + MUTATE_PATH + " and GET " + HEALTH_PATH);
            } else if (!method.equals("POST")) {
                ex.getResponseHeaders().set("Allow", "POST");
                text(ex, 405, "use POST on " + MUTATE_PATH);
            } else {
                byte[] body;
                try (InputStream in = ex.getRequestBody()) {
                    body = in.readNBytes(MAX_BODY_BYTES + 1);
                }
                if (body.length > MAX_BODY_BYTES) {
                    LOG.warn("admission review refused: the body is over {} bytes", MAX_BODY_BYTES);
                    text(ex, 413, "the body is over " + MAX_BODY_BYTES + " bytes");
                    return;
                }
                try {
                    send(ex, 200, webhook.review(body), "application/json");
                } catch (AdmissionWebhook.BadReviewException e) {
                    LOG.warn("admission review refused (400): {}", e.getMessage());
                    text(ex, 400, e.getMessage());
                }
            }
        } catch (IOException e) {
            // the client went away while sending
            LOG.debug("{} {}: the request could not be read: {}", method, path, e.toString());
        } catch (RuntimeException e) {
            // a bug, not bad input: answer 500 and keep serving (kube-apiserver admits the pod: failure policy Ignore)
            LOG.error("{} {} failed", method, path, e);
            text(ex, 500, "internal error: " + e.getClass().getSimpleName());
        }
    }

    private static void text(HttpExchange ex, int status, String message) {
        send(ex, status, (message + "\n").getBytes(StandardCharsets.UTF_8), "text/plain; charset=utf-8");
    }

    private static void send(HttpExchange ex, int status, byte[] body, String contentType) {
        try {
            ex.getResponseHeaders().set("Content-Type", contentType);
            boolean head = ex.getRequestMethod().equalsIgnoreCase("HEAD");
            ex.sendResponseHeaders(status, head ? -1 : body.length);
            if (!head) {
                try (OutputStream out = ex.getResponseBody()) {
                    out.write(body);
                }
            }
        } catch (IOException | RuntimeException e) {
            // the client went away, or the headers went out already: nothing more can be said to it
            LOG.debug("could not answer {} {}: {}", ex.getRequestMethod(), ex.getRequestURI(), e.toString());
        }
    }

    /** The file's bytes; one line naming the flag and the file when it cannot be read (as at the flags' check). */
    private static byte[] read(String flag, Path file) {
        try {
            return Files.readAllBytes(AllocatorFlags.readableFile(flag, file.toString()));
        } catch (IOException e) {
            throw new IllegalArgumentException(flag + " " + file + ": cannot be read (" + e.getMessage() + ")");
        }
    }

    /** Whether the key signs what the certificate's public key verifies. */
    private static boolean matches(PrivateKey key, X509Certificate cert) throws GeneralSecurityException {
        String algorithm = key.getAlgorithm().equals("EC") ? "SHA256withECDSA" : "SHA256with" + key.getAlgorithm();
        byte[] probe = "qgpu-webhook key check".getBytes(StandardCharsets.UTF_8);
        Signature sign = Signature.getInstance(algorithm);
        sign.initSign(key);
        sign.update(probe);
        byte[] signature = sign.sign();
        Signature verify = Signature.getInstance(algorithm);
        verify.initVerify(cert.getPublicKey());
        verify.update(probe);
        return verify.verify(signature);
    }
}
