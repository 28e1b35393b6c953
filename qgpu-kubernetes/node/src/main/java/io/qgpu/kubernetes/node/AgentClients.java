package io.qgpu.kubernetes.node;

import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * How the agents and controllers reach the API server: their client ({@code --kubeconfig}, else fabric8's automatic
 * configuration, which in a pod is the in-cluster one) and the wait for an informer's first list.
 *
 * <pre>{@code
 * KubernetesClient client = AgentClients.client(Optional.of(Path.of("/etc/kubeconfig")));
 * SharedIndexInformer<Pod> pods = client.pods().inAnyNamespace().runnableInformer(0);
 * AgentClients.awaitSynced(pods, System.nanoTime() + Duration.ofSeconds(60).toNanos(), "Pod");
 * }</pre>
 *
 * <p>Thread safety: stateless.
 */
public final class AgentClients {
    private AgentClients() {
    }

    /** A client from the kubeconfig file, else fabric8's automatic configuration (in a pod: the in-cluster one). */
    public static KubernetesClient client(Optional<Path> kubeconfig) throws IOException {
        if (kubeconfig.isPresent()) {
            return new KubernetesClientBuilder()
                    .withConfig(Config.fromKubeconfig(Files.readString(kubeconfig.get(), StandardCharsets.UTF_8))).build();
        }
        return new KubernetesClientBuilder().withConfig(Config.autoConfigure(null)).build();
    }

    /**
     * Starts the informer and waits until its first list is in its store, up to {@code deadline} ({@link System#nanoTime}).
     *
     * @param what the kind, for messages ({@code "Pod"})
     * @throws TimeoutException      naming the kind when the list does not come in time
     * @throws IllegalStateException naming the kind and the cause when the informer fails to start
     */
    public static void awaitSynced(SharedIndexInformer<?> informer, long deadline, String what)
            throws TimeoutException, InterruptedException {
        awaitSynced(informer.start().toCompletableFuture(), deadline, what);
    }

    /** As {@link #awaitSynced(SharedIndexInformer, long, String)}, for an informer already started. */
    public static void awaitSynced(CompletableFuture<?> started, long deadline, String what)
            throws TimeoutException, InterruptedException {
        try {
            started.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            throw new IllegalStateException("the " + what + " informer failed to start: " + e.getCause().getMessage(), e.getCause());
        } catch (TimeoutException e) {
            throw new TimeoutException("the " + what + " informer did not sync in time");
        }
    }
}
