package io.qgpu.kubernetes.node;

import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.http.HttpClient;
import io.fabric8.kubernetes.client.http.HttpRequest;
import io.fabric8.kubernetes.client.http.HttpResponse;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.net.ssl.SSLException;

/**
 * The agents' start-up check of the Kubernetes API server ({@code --api-timeout}): one cheap request,
 * {@code GET /version}, with the agent's client's configuration (its credentials and TLS settings) but no retries
 * (fabric8 retries a refused connection with back-off for about 20 s by default) and the timeout as connect and request
 * timeout, bounded as a whole by the timeout. A failure is one line naming the server's URL
 * and the cause: connection refused, unknown host, TLS, 401/403, no answer in time.
 *
 * <pre>{@code
 * Optional<String> problem = ApiServerCheck.problem(client, Duration.ofSeconds(10));
 * // Optional[the Kubernetes API server https://127.0.0.1:1/: connection refused]
 * }</pre>
 *
 * <p>The scheduler extender uses it too (it takes this module without its NVML, JNA and gRPC parts).
 *
 * <p>Thread safety: stateless.
 */
public final class ApiServerCheck {
    /** Default of {@code --api-timeout}. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(10);
    /** The flag that sets the timeout. */
    public static final String FLAG = "--api-timeout";

    private ApiServerCheck() {
    }

    /** Empty when the server answered {@code /version} in time; else why not, in one line naming its URL. */
    public static Optional<String> problem(KubernetesClient client, Duration timeout) {
        String master = client.getConfiguration().getMasterUrl();
        String url = master == null ? "(no URL)" : master;
        String who = "the Kubernetes API server " + url;
        KubernetesClient check;
        try {
            int ms = (int) Math.min(Integer.MAX_VALUE, timeout.toMillis());
            Config c = new ConfigBuilder(client.getConfiguration()).withRequestRetryBackoffLimit(0).withConnectionTimeout(ms)
                    .withRequestTimeout(ms).build();
            check = new KubernetesClientBuilder().withConfig(c).build();
        } catch (RuntimeException e) {
            return Optional.of(who + ": " + cause(e, timeout));
        }
        try (KubernetesClient k = check) {
            return send(k, who, url, timeout);
        }
    }

    private static Optional<String> send(KubernetesClient client, String who, String url, Duration timeout) {
        CompletableFuture<HttpResponse<String>> f;
        try {
            HttpClient http = client.getHttpClient();
            URI base = URI.create(url.endsWith("/") ? url : url + "/");
            HttpRequest req = http.newHttpRequestBuilder().uri(base.resolve("version")).timeout(timeout.toMillis(), TimeUnit.MILLISECONDS)
                    .build();
            f = http.sendAsync(req, String.class);
        } catch (RuntimeException e) {
            return Optional.of(who + ": " + cause(e, timeout));
        }
        try {
            HttpResponse<String> r = f.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            int code = r.code();
            if (code == 401) {
                return Optional.of(who + ": 401 Unauthorized: the credentials of the kubeconfig (or the pod's service account) were refused");
            }
            if (code == 403) {
                return Optional.of(who + ": 403 Forbidden: these credentials may not read /version");
            }
            if (code < 200 || code >= 300) {
                return Optional.of(who + ": /version answered HTTP " + code);
            }
            return Optional.empty();
        } catch (TimeoutException e) {
            f.cancel(true);
            return Optional.of(who + ": no answer within " + seconds(timeout) + " (" + FLAG + ")");
        } catch (ExecutionException e) {
            return Optional.of(who + ": " + cause(e.getCause(), timeout));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            f.cancel(true);
            return Optional.of(who + ": interrupted while waiting for an answer");
        }
    }

    /** The cause of a failed request in a few words (the cause chain's most telling exception). */
    static String cause(Throwable e, Duration timeout) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof UnknownHostException) {
                String m = t.getMessage() == null ? "" : t.getMessage().replaceAll("^Failed to resolve '([^']*)'.*", "$1");
                return "unknown host" + (m.isBlank() ? "" : " " + m.split("[ :]")[0]);
            }
            if (t instanceof ConnectException && t.getMessage() != null && t.getMessage().toLowerCase(Locale.ROOT).contains("refused")) {
                return "connection refused";
            }
            if (t instanceof NoRouteToHostException) {
                return "no route to host";
            }
            if (t instanceof SSLException) {
                return "TLS handshake failed (" + firstLine(t.getMessage()) + ")";
            }
            if (t instanceof SocketTimeoutException || t instanceof TimeoutException) {
                return "no answer within " + seconds(timeout) + " (" + FLAG + ")";
            }
        }
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof ConnectException) {
                return "cannot connect (" + firstLine(t.getMessage()) + ")";
            }
        }
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        return firstLine(root.getMessage() == null ? root.getClass().getSimpleName() : root.getMessage());
    }

    private static String seconds(Duration d) {
        return d.toMillis() % 1000 == 0 ? d.toSeconds() + "s" : d.toMillis() + "ms";
    }

    private static String firstLine(String s) {
        if (s == null) {
            return "";
        }
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }
}
