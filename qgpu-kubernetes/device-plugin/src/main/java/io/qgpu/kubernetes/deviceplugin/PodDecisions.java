package io.qgpu.kubernetes.deviceplugin;

import io.qgpu.api.Placement;
import io.qgpu.api.Validate;
import java.util.List;

/**
 * Where the plugin finds the scheduler extender's decision for an {@code Allocate} call. The call
 * carries no pod identity, so, as other scheduler-plus-plugin systems do, the plugin takes the oldest
 * pod bound to this node whose {@value Names#PLACEMENT} annotation asks for as many GPUs as the
 * kubelet allocates and that the plugin has not applied yet, and marks it applied.
 *
 * <p>Implementations must be thread-safe; the plugin calls them under its own lock.
 */
public interface PodDecisions {

    /** The pods bound to this node, not applied yet, whose placement has {@code gpuCount} GPUs; oldest bind first. */
    List<PendingPod> pending(int gpuCount);

    /**
     * Records that the pod's placement was applied to these virtual device ids. May throw (a
     * {@link PluginException}); the mark may then have been recorded or not.
     */
    void applied(PendingPod pod, List<String> deviceIds);

    /**
     * Takes back the mark {@link #applied} records, so that the pod is {@link #pending} again: the
     * plugin calls it for every pod whose mark it attempted in an {@code Allocate} that then failed
     * as a whole. Idempotent: a pod without the mark stays as it is.
     */
    void withdrawn(PendingPod pod);

    /** No extender: the plugin always decides itself. */
    static PodDecisions none() {
        return new PodDecisions() {
            @Override
            public List<PendingPod> pending(int gpuCount) {
                return List.of();
            }

            @Override
            public void applied(PendingPod pod, List<String> deviceIds) {
                // nothing to record
            }

            @Override
            public void withdrawn(PendingPod pod) {
                // nothing recorded
            }
        };
    }

    /**
     * A pod with the extender's decision.
     *
     * @param namespace the pod's namespace
     * @param name      the pod's name
     * @param uid       the pod's UID
     * @param placement the extender's placement
     */
    record PendingPod(String namespace, String name, String uid, Placement placement) {
        public PendingPod {
            Validate.notBlank("pendingPod.namespace", namespace);
            Validate.notBlank("pendingPod.name", name);
            Validate.notNull("pendingPod.uid", uid);
            Validate.notNull("pendingPod.placement", placement);
        }

        /** {@code namespace/name}. */
        public String key() {
            return namespace + "/" + name;
        }
    }
}
