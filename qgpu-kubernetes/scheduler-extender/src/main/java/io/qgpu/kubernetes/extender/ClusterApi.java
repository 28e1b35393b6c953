package io.qgpu.kubernetes.extender;

import io.fabric8.kubernetes.api.model.Pod;
import java.util.Map;
import java.util.Optional;

/**
 * What {@code bind} needs from the cluster: the pod as it is now, and a way to record the decision
 * on it and bind it. {@link KubernetesCluster} talks to the API server; {@link DemoCluster} keeps
 * the pods it was shown and binds nothing.
 *
 * <pre>{@code
 * ClusterApi api = new KubernetesCluster(client);
 * Pod pod = api.pod("team-a", "infer-0").orElseThrow();
 * api.bind(pod, "node-a", Map.of("qgpu.io/visible-devices", "GPU-a0"));
 * }</pre>
 *
 * <p>Thread safety: implementations must be thread-safe.
 */
public interface ClusterApi {

    /** The pod, or empty when it does not exist. */
    Optional<Pod> pod(String namespace, String name);

    /**
     * Whether {@link #pod} and {@link #bind} wait on another machine (the API server): then the
     * extender's server runs bind on a worker thread, never on an event loop that also serves filter and
     * prioritize. True unless an implementation answers from memory.
     */
    default boolean waitsOnNetwork() {
        return true;
    }

    /**
     * Writes {@code annotations} on the pod, then binds it to {@code node}. Either both happen or the
     * call throws; an exception after the annotations were written leaves them on an unbound pod,
     * which is harmless (only bound pods are read back).
     *
     * @throws ClusterApiException when the API refuses or cannot be reached
     */
    void bind(Pod pod, String node, Map<String, String> annotations);

    /** A call to the cluster failed; the message says which call and why. */
    final class ClusterApiException extends io.qgpu.api.QgpuException {
        private static final long serialVersionUID = 1L;

        public ClusterApiException(String message, Throwable cause) {
            super(message, cause);
        }
    }
}
