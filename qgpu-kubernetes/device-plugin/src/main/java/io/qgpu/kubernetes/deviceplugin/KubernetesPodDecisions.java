package io.qgpu.kubernetes.deviceplugin;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.grpc.Status;
import io.qgpu.api.Placement;
import io.qgpu.api.QgpuException;
import io.qgpu.api.Validate;
import io.qgpu.json.QgpuJson;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link PodDecisions} from the Kubernetes API: the pods bound to this node that carry the
 * extender's {@value Names#PLACEMENT} annotation for this node and no {@value Names#ALLOCATED} mark,
 * that are not finished or being deleted; oldest bind first (the {@code PodScheduled} condition's
 * time, then the creation time, then the name). {@link #applied} sets {@value Names#ALLOCATED} with a
 * JSON merge patch, {@link #withdrawn} removes it with another. A placement annotation that cannot be read is logged and the pod skipped.
 *
 * <pre>{@code
 * PodDecisions d = new KubernetesPodDecisions(new KubernetesClientBuilder().build(), System.getenv("NODE_NAME"));
 * }</pre>
 *
 * <p>Needs {@code pods} list and patch on the node's pods. Thread safety: thread-safe.
 */
public final class KubernetesPodDecisions implements PodDecisions {
    private static final Logger LOG = LoggerFactory.getLogger(KubernetesPodDecisions.class);

    private final KubernetesClient client;
    private final String nodeName;
    private final boolean fieldSelector;

    public KubernetesPodDecisions(KubernetesClient client, String nodeName) {
        this(client, nodeName, true);
    }

    /**
     * @param fieldSelector whether to ask the API server for this node's pods only
     *                      ({@code spec.nodeName}); the pods are checked here either way
     */
    KubernetesPodDecisions(KubernetesClient client, String nodeName, boolean fieldSelector) {
        this.client = Validate.notNull("podDecisions.client", client);
        this.nodeName = Validate.notBlank("podDecisions.nodeName", nodeName);
        this.fieldSelector = fieldSelector;
    }

    @Override
    public List<PendingPod> pending(int gpuCount) {
        List<Pod> pods;
        try {
            pods = fieldSelector
                    ? client.pods().inAnyNamespace().withField("spec.nodeName", nodeName).list().getItems()
                    : client.pods().inAnyNamespace().list().getItems();
        } catch (KubernetesClientException e) {
            throw new PluginException(Status.Code.UNAVAILABLE, "cannot list the pods of node " + nodeName
                    + " to find the extender's decision: " + e.getMessage(), e);
        }
        List<Pod> candidates = new ArrayList<>();
        List<PendingPod> out = new ArrayList<>();
        for (Pod pod : pods) {
            if (pod.getMetadata() == null || pod.getSpec() == null || !nodeName.equals(pod.getSpec().getNodeName())
                    || pod.getMetadata().getDeletionTimestamp() != null || finished(pod)) {
                continue;
            }
            Map<String, String> a = pod.getMetadata().getAnnotations();
            // a mark withdrawn by a merge patch is gone; a server that keeps the key with no value
            // (fabric8's mock does) leaves no mark either
            if (a == null || !a.containsKey(Names.PLACEMENT) || a.get(Names.ALLOCATED) != null) {
                continue;
            }
            candidates.add(pod);
        }
        candidates.sort(Comparator.comparing(KubernetesPodDecisions::boundAt)
                .thenComparing(p -> p.getMetadata().getNamespace() + "/" + p.getMetadata().getName()));
        for (Pod pod : candidates) {
            String key = pod.getMetadata().getNamespace() + "/" + pod.getMetadata().getName();
            Placement p;
            try {
                p = QgpuJson.readPlacement(pod.getMetadata().getAnnotations().get(Names.PLACEMENT));
            } catch (QgpuException e) {
                LOG.warn("pod {}: annotation {} cannot be read; skipped: {}", key, Names.PLACEMENT, e.getMessage());
                continue;
            }
            if (!nodeName.equals(p.nodeName())) {
                LOG.warn("pod {}: annotation {} places it on node {}, not on {}; skipped", key, Names.PLACEMENT,
                        p.nodeName(), nodeName);
                continue;
            }
            if (p.slices().size() == gpuCount) {
                out.add(new PendingPod(pod.getMetadata().getNamespace(), pod.getMetadata().getName(),
                        String.valueOf(pod.getMetadata().getUid()), p));
            }
        }
        return List.copyOf(out);
    }

    @Override
    public void applied(PendingPod pod, List<String> deviceIds) {
        Pod patch = new Pod();
        patch.setMetadata(new io.fabric8.kubernetes.api.model.ObjectMetaBuilder()
                .addToAnnotations(Names.ALLOCATED, String.join(",", deviceIds)).build());
        try {
            client.pods().inNamespace(pod.namespace()).withName(pod.name())
                    .patch(PatchContext.of(PatchType.JSON_MERGE), patch);
        } catch (KubernetesClientException e) {
            throw new PluginException(Status.Code.UNAVAILABLE, "pod " + pod.key() + ": cannot set " + Names.ALLOCATED
                    + ": " + e.getMessage(), e);
        }
    }

    @Override
    public void withdrawn(PendingPod pod) {
        // a merge patch with null removes the key; removing an absent key changes nothing
        String patch = "{\"metadata\":{\"annotations\":{\"" + Names.ALLOCATED + "\":null}}}";
        try {
            client.pods().inNamespace(pod.namespace()).withName(pod.name()).patch(PatchContext.of(PatchType.JSON_MERGE), patch);
        } catch (KubernetesClientException e) {
            throw new PluginException(Status.Code.UNAVAILABLE, "pod " + pod.key() + ": cannot remove " + Names.ALLOCATED
                    + ": " + e.getMessage(), e);
        }
    }

    private static boolean finished(Pod pod) {
        String phase = pod.getStatus() == null ? null : pod.getStatus().getPhase();
        return "Succeeded".equals(phase) || "Failed".equals(phase);
    }

    /** The PodScheduled condition's time, else the creation time, as RFC 3339 text (which sorts by time). */
    private static String boundAt(Pod pod) {
        if (pod.getStatus() != null && pod.getStatus().getConditions() != null) {
            for (PodCondition c : pod.getStatus().getConditions()) {
                if ("PodScheduled".equals(c.getType()) && "True".equals(c.getStatus()) && c.getLastTransitionTime() != null) {
                    return c.getLastTransitionTime();
                }
            }
        }
        String created = pod.getMetadata().getCreationTimestamp();
        return created == null ? "" : created;
    }
}
