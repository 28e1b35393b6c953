package io.qgpu.kubernetes.extender;

import io.fabric8.kubernetes.api.model.Pod;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * {@link ClusterApi} without a Kubernetes API (the {@code --demo} mode): it remembers the last
 * {@value #CAPACITY} pods it saw in filter and prioritize calls, answers {@link #pod} from them, and
 * {@link #bind} records nothing but the decision on its own copy of the pod. The ledger is the only
 * state that changes.
 *
 * <pre>{@code
 * DemoCluster demo = new DemoCluster();
 * demo.remember(pod);                 // done by the server on every filter/prioritize
 * demo.pod("team-a", "infer-0");      // the remembered pod
 * }</pre>
 *
 * <p>Thread safety: thread-safe (synchronised).
 */
public final class DemoCluster implements ClusterApi {
    /** How many pods are remembered (least recently seen dropped first). */
    public static final int CAPACITY = 10_000;

    /** A pod as seen, and the decision bind recorded on it (null node until bound). */
    private record Entry(Pod pod, String node, Map<String, String> annotations) {
        /** The pod as the API server would now return it: with the bind's annotations and node. */
        Pod current() {
            if (node == null) {
                return pod;
            }
            return new io.fabric8.kubernetes.api.model.PodBuilder(pod)
                    .editMetadata().addToAnnotations(annotations).endMetadata()
                    .editOrNewSpec().withNodeName(node).endSpec()
                    .build();
        }
    }

    private final Map<String, Entry> pods = Collections.synchronizedMap(new LinkedHashMap<>(16, 0.75f, true) {
        private static final long serialVersionUID = 1L;

        // qualified: inside a LinkedHashMap subclass a plain Entry may name the map's own member type
        // (JDK 25's javac reads it so, and the method then overrides nothing)
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, DemoCluster.Entry> eldest) {
            return size() > CAPACITY;
        }
    });

    /** False: the pods are in memory, and bind writes nothing anywhere. */
    @Override
    public boolean waitsOnNetwork() {
        return false;
    }

    /** Remembers a pod the scheduler showed, so that a later bind finds it. */
    public void remember(Pod pod) {
        pods.put(PodClaims.tenantOf(pod), new Entry(pod, null, Map.of()));
    }

    @Override
    public Optional<Pod> pod(String namespace, String name) {
        Entry e = pods.get(PodClaims.tenantOf(namespace, name));
        return e == null ? Optional.empty() : Optional.of(e.current());
    }

    /**
     * Records the decision. The bound copy of the pod (annotations and node added) is made when the pod
     * is next read, not here: bind is on the scheduler's critical path, a read after it is not.
     */
    @Override
    public void bind(Pod pod, String node, Map<String, String> annotations) {
        pods.put(PodClaims.tenantOf(pod), new Entry(pod, node, Collections.unmodifiableMap(new LinkedHashMap<>(annotations))));
    }
}
