package io.qgpu.kubernetes.allocator;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.qgpu.kubernetes.node.AgentClients;
import io.qgpu.kubernetes.node.ApiServerCheck;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code java -jar qgpu-dra-allocator.jar [options]}: see {@link AllocatorFlags#USAGE}. A refused command line, a
 * kubeconfig that cannot be read and an API server that does not answer within {@code --api-timeout} are one line
 * on standard error naming the flag or the server and exit code {@value #USAGE_ERROR}; a start that fails later exits
 * with {@value #START_ERROR}. SIGTERM stops it (logged) and exits 0.
 *
 * <p>Thread safety: a program entry point.
 */
public final class Main {
    private static final Logger LOG = LoggerFactory.getLogger(Main.class);
    /** Exit code of a refused command line or an unreachable API server. */
    static final int USAGE_ERROR = 2;
    /** Exit code of a start that failed after the checks. */
    static final int START_ERROR = 1;

    private Main() {
    }

    public static void main(String[] args) {
        for (String p : List.of("io.netty.noUnsafe")) {
            if (System.getProperty(p) == null) {
                System.setProperty(p, "true");
            }
        }
        System.exit(run(args, System.getenv(), System.out, System.err));
    }

    /** Runs the allocator until it is stopped; returns the exit code. */
    static int run(String[] args, Map<String, String> env, PrintStream out, PrintStream err) {
        AllocatorFlags flags;
        try {
            flags = AllocatorFlags.parse(args);
        } catch (AllocatorFlags.BadFlagException e) {
            err.println("error: " + e.getMessage());
            return USAGE_ERROR;
        }
        if (flags.help()) {
            out.print(AllocatorFlags.USAGE);
            return 0;
        }
        if (flags.webhook().isPresent()) {
            try {
                WebhookServer.sslContext(flags.webhook().get().tlsCert(), flags.webhook().get().tlsKey());
            } catch (IllegalArgumentException e) {
                err.println("error: " + e.getMessage());
                return USAGE_ERROR;
            }
        }
        KubernetesClient client;
        try {
            client = AgentClients.client(flags.kubeconfig());
        } catch (IOException | RuntimeException e) {
            err.println("error: --kubeconfig " + flags.kubeconfig().map(Path::toString).orElse("(in-cluster)") + ": " + e.getMessage());
            return USAGE_ERROR;
        }
        Optional<String> api = ApiServerCheck.problem(client, flags.apiTimeout());
        if (api.isPresent()) {
            client.close();
            err.println("error: " + flags.kubeconfig().map(k -> "--kubeconfig " + k)
                    .orElse("kubeconfig ($KUBECONFIG, ~/.kube/config or in-cluster)") + ": " + api.get());
            return USAGE_ERROR;
        }
        AllocatorApp app;
        try {
            app = AllocatorApp.start(flags, client, env);
        } catch (Exception e) {
            client.close();
            err.println("error: the allocator could not start: " + String.valueOf(e.getMessage()).lines().findFirst().orElse(""));
            return START_ERROR;
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            LOG.info("stopping (signal received)");
            app.close();
            client.close();
        }, "qgpu-dra-allocator-stop"));
        try {
            app.awaitClose();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return 0;
    }
}
