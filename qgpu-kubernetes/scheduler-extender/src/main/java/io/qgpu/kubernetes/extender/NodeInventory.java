package io.qgpu.kubernetes.extender;

import io.qgpu.api.NodeState;
import io.qgpu.api.QgpuException;
import io.qgpu.json.QgpuJson;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.ledger.LedgerStateException;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the ledger's nodes in step with the Kubernetes nodes that carry a
 * {@value QgpuAnnotations#INVENTORY} annotation (the node's GPUs as {@code QgpuJson.writeNode}
 * writes them). The node's Kubernetes name wins over a name inside the annotation; the annotation's
 * labels are kept (Kubernetes itself matches the pod's nodeSelector against the node's own labels).
 *
 * <pre>{@code
 * NodeInventory inv = new NodeInventory(ledger);
 * inv.sync(k8sNode);          // adds the node if new, replaces an idle node whose GPUs changed
 * }</pre>
 *
 * <p>A node whose inventory changed while it holds reservations is left as it is (with a warning):
 * replacing it would drop the reservations. An annotation that cannot be read is logged and the node
 * is skipped; it never stops the extender.
 *
 * <p>Thread safety: thread-safe; {@link #sync} is serialised.
 */
public final class NodeInventory {
    private static final Logger LOG = LoggerFactory.getLogger(NodeInventory.class);

    private final Ledger ledger;

    public NodeInventory(Ledger ledger) {
        this.ledger = io.qgpu.api.Validate.notNull("ledger", ledger);
    }

    /** The qgpu node described by a Kubernetes node's annotation, renamed to the Kubernetes name; empty without one. */
    public static Optional<io.qgpu.api.Node> parse(io.fabric8.kubernetes.api.model.Node k8s) {
        if (k8s == null || k8s.getMetadata() == null || k8s.getMetadata().getName() == null) {
            return Optional.empty();
        }
        Map<String, String> a = k8s.getMetadata().getAnnotations();
        String json = a == null ? null : a.get(QgpuAnnotations.INVENTORY);
        if (json == null) {
            return Optional.empty();
        }
        io.qgpu.api.Node n = QgpuJson.readNode(json);
        String name = k8s.getMetadata().getName();
        return Optional.of(name.equals(n.name()) ? n : new io.qgpu.api.Node(name, n.labels(), n.gpus(), n.topology(), n.host()));
    }

    /**
     * Brings the ledger in step with one Kubernetes node.
     *
     * @return whether the ledger changed
     */
    public synchronized boolean sync(io.fabric8.kubernetes.api.model.Node k8s) {
        io.qgpu.api.Node node;
        try {
            Optional<io.qgpu.api.Node> parsed = parse(k8s);
            if (parsed.isEmpty()) {
                return false;
            }
            node = parsed.get();
        } catch (QgpuException e) {
            LOG.warn("node {}: annotation {} cannot be read, node skipped: {}", k8s.getMetadata().getName(),
                    QgpuAnnotations.INVENTORY, e.getMessage());
            return false;
        }
        Optional<NodeState> current = ledger.node(node.name());
        if (current.isPresent()) {
            if (current.get().node().equals(node)) {
                return false;
            }
            if (current.get().tenants() > 0) {
                LOG.warn("node {}: inventory changed while it holds {} reservation(s); kept the old inventory until it is idle",
                        node.name(), current.get().tenants());
                return false;
            }
            ledger.removeNode(node.name());
            LOG.info("node {}: inventory changed, replaced", node.name());
        }
        try {
            ledger.addNode(node);
            return true;
        } catch (LedgerStateException e) {
            LOG.warn("node {} not added: {}", node.name(), e.getMessage());
            return false;
        }
    }
}
