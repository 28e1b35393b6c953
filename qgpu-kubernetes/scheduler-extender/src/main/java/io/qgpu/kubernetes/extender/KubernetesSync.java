package io.qgpu.kubernetes.extender;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.qgpu.api.Placement;
import io.qgpu.api.Validate;
import io.qgpu.core.ledger.ReconcileReport;
import io.qgpu.kubernetes.node.AgentClients;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps a {@link GpuExtender} in step with the cluster through two fabric8 informers:
 * <ol>
 *   <li>nodes: every node with a {@value QgpuAnnotations#INVENTORY} annotation is added to the
 *       ledger (and replaced when its inventory changes while it is idle); a deleted node is removed;</li>
 *   <li>pods: once both informers have synced, the ledger is rebuilt from the
 *       {@value QgpuAnnotations#PLACEMENT} annotations of the bound pods
 *       ({@link GpuExtender#reconcile}, report logged); afterwards a deleted pod, or one that
 *       finished (phase Succeeded or Failed), releases its slices ({@link GpuExtender#podGone}).</li>
 * </ol>
 *
 * <pre>{@code
 * try (KubernetesSync sync = new KubernetesSync(client, extender)) {
 *     ReconcileReport report = sync.start(Duration.ofSeconds(60));
 *     ...serve...
 * }
 * }</pre>
 *
 * <p>Thread safety: {@link #start} and {@link #close} are meant for one thread; event handlers run
 * on fabric8's informer threads and go through the extender's own locking.
 */
public final class KubernetesSync implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(KubernetesSync.class);

    private final KubernetesClient client;
    private final GpuExtender extender;
    private final Consumer<Placement> onRelease;
    private SharedIndexInformer<Node> nodes;
    private SharedIndexInformer<Pod> pods;

    public KubernetesSync(KubernetesClient client, GpuExtender extender) {
        this(client, extender, p -> { });
    }

    /** With a hook called after each release caused by a pod event (tests wait on it). */
    public KubernetesSync(KubernetesClient client, GpuExtender extender, Consumer<Placement> onRelease) {
        this.client = Validate.notNull("client", client);
        this.extender = Validate.notNull("extender", extender);
        this.onRelease = Validate.notNull("onRelease", onRelease);
    }

    /**
     * Starts both informers, waits for them to sync, and reconciles the ledger with the bound pods.
     *
     * @throws TimeoutException if the informers do not sync within {@code timeout}
     */
    public synchronized ReconcileReport start(Duration timeout) throws TimeoutException, InterruptedException {
        if (pods != null) {
            throw new IllegalStateException("already started");
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        nodes = client.nodes().runnableInformer(0);
        nodes.addEventHandler(new ResourceEventHandler<>() {
            @Override
            public void onAdd(Node n) {
                extender.inventory().sync(n);
            }

            @Override
            public void onUpdate(Node oldNode, Node n) {
                extender.inventory().sync(n);
            }

            @Override
            public void onDelete(Node n, boolean deletedFinalStateUnknown) {
                if (n.getMetadata() != null && n.getMetadata().getName() != null) {
                    extender.ledger().removeNode(n.getMetadata().getName());
                }
            }
        });
        pods = client.pods().inAnyNamespace().runnableInformer(0);
        pods.addEventHandler(new ResourceEventHandler<>() {
            @Override
            public void onAdd(Pod p) {
                // bound pods present at start are taken by reconcile; later ones by bind
            }

            @Override
            public void onUpdate(Pod oldPod, Pod p) {
                if (GpuExtender.finished(p) && !GpuExtender.finished(oldPod)) {
                    gone(p);
                }
            }

            @Override
            public void onDelete(Pod p, boolean deletedFinalStateUnknown) {
                gone(p);
            }
        });
        AgentClients.awaitSynced(nodes, deadline, "nodes");
        AgentClients.awaitSynced(pods, deadline, "pods");
        // a synced informer may still be delivering its initial nodes to the handler: add every node in its
        // store first (sync is idempotent), or reconcile would refuse the pods of nodes not yet delivered
        for (Node n : nodes.getStore().list()) {
            extender.inventory().sync(n);
        }
        ReconcileReport report = extender.reconcile(pods.getStore().list());
        LOG.info("in step with the cluster: {} node(s) in the ledger, {} reservation(s)", extender.ledger().nodes().size(),
                extender.ledger().size());
        return report;
    }

    private void gone(Pod p) {
        try {
            Optional<Placement> released = extender.podGone(p);
            released.ifPresent(onRelease);
        } catch (RuntimeException e) {
            LOG.warn("pod event not applied: {}", e.getMessage());
        }
    }

    @Override
    public synchronized void close() {
        if (pods != null) {
            pods.close();
        }
        if (nodes != null) {
            nodes.close();
        }
    }
}
