package io.qgpu.kubernetes.extender;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Map;

/**
 * The wire types of kube-scheduler's HTTP extender protocol ({@code k8s.io/kube-scheduler/extender/v1}),
 * with the capitalised keys Go's {@code encoding/json} writes for fields without JSON tags.
 *
 * <p>The Pod and Node objects inside them are ordinary Kubernetes JSON (lower-case keys); they are
 * kept here as JSON trees so that the nodes a filter returns are byte-for-byte the nodes it was given
 * (a subset of the input, as the scheduler requires), and converted to fabric8's model classes where
 * they are read ({@link ExtenderRequests}).
 *
 * <pre>{@code
 * FilterResult r = FilterResult.ofNames(List.of("node-a"), Map.of("node-b", "GPU-b0: INSUFFICIENT_MEMORY ..."), Map.of());
 * String json = new String(ExtenderRequests.write(r), StandardCharsets.UTF_8);
 * // {"Nodes":null,"NodeNames":["node-a"],"FailedNodes":{"node-b":"..."},"FailedAndUnresolvableNodes":{},"Error":""}
 * }</pre>
 *
 * <p>Thread safety: every type here is immutable.
 */
public final class ExtenderProtocol {

    /** The highest score a prioritize reply may give ({@code MaxExtenderPriority}). */
    public static final long MAX_PRIORITY = 10;
    /** The lowest score ({@code MinExtenderPriority}). */
    public static final long MIN_PRIORITY = 0;

    private ExtenderProtocol() {
    }

    /**
     * {@code ExtenderArgs}: the pod and the candidate nodes, as full objects ({@code Nodes}, a NodeList,
     * when {@code nodeCacheCapable} is false) or as names ({@code NodeNames}, when it is true).
     *
     * @param pod       the pod being scheduled, as JSON
     * @param nodes     the NodeList, as JSON, or {@code null}
     * @param nodeNames the node names, or {@code null}
     */
    @JsonPropertyOrder({"Pod", "Nodes", "NodeNames"})
    public record ExtenderArgs(@JsonProperty("Pod") JsonNode pod,
                               @JsonProperty("Nodes") JsonNode nodes,
                               @JsonProperty("NodeNames") List<String> nodeNames) {
    }

    /**
     * {@code ExtenderFilterResult}. Exactly one of {@code Nodes} and {@code NodeNames} is filled, in the
     * mode of the request. Go's {@code FailedNodesMap} never travels as {@code null} here.
     *
     * @param nodes                      the NodeList of nodes that fit (full objects, as given), or {@code null}
     * @param nodeNames                  names of nodes that fit, or {@code null}
     * @param failedNodes                node name to why it cannot take the pod now
     * @param failedAndUnresolvableNodes node name to why it can never take the pod (preemption would not help)
     * @param error                      an error for the whole call, or empty
     */
    @JsonPropertyOrder({"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"})
    @JsonInclude(JsonInclude.Include.ALWAYS)
    public record FilterResult(@JsonProperty("Nodes") JsonNode nodes,
                               @JsonProperty("NodeNames") List<String> nodeNames,
                               @JsonProperty("FailedNodes") Map<String, String> failedNodes,
                               @JsonProperty("FailedAndUnresolvableNodes") Map<String, String> failedAndUnresolvableNodes,
                               @JsonProperty("Error") String error) {

        public FilterResult {
            failedNodes = failedNodes == null ? Map.of() : Map.copyOf(failedNodes);
            failedAndUnresolvableNodes = failedAndUnresolvableNodes == null ? Map.of() : Map.copyOf(failedAndUnresolvableNodes);
            error = error == null ? "" : error;
            // the filter's own list of passed names (unmodifiable, made once) is kept, not copied
            nodeNames = nodeNames == null ? null : nodeNames instanceof CandidateNames ? nodeNames : List.copyOf(nodeNames);
        }

        /** A reply in {@code nodeCacheCapable} mode. */
        public static FilterResult ofNames(List<String> names, Map<String, String> failed, Map<String, String> unresolvable) {
            return new FilterResult(null, names, failed, unresolvable, "");
        }

        /** A reply with full node objects (a NodeList tree). */
        public static FilterResult ofNodes(JsonNode nodeList, Map<String, String> failed, Map<String, String> unresolvable) {
            return new FilterResult(nodeList, null, failed, unresolvable, "");
        }
    }

    /**
     * One {@code HostPriority} of a {@code HostPriorityList}.
     *
     * @param host  node name
     * @param score 0..10
     */
    @JsonPropertyOrder({"Host", "Score"})
    public record HostPriority(@JsonProperty("Host") String host, @JsonProperty("Score") long score) {
        public HostPriority {
            if (score < MIN_PRIORITY || score > MAX_PRIORITY) {
                throw new io.qgpu.api.InvalidValueException("HostPriority[" + host + "].Score", score,
                        "must be between " + MIN_PRIORITY + " and " + MAX_PRIORITY);
            }
        }
    }

    /**
     * {@code ExtenderBindingArgs}.
     *
     * @param podName      the pod's name
     * @param podNamespace the pod's namespace
     * @param podUid       the pod's UID
     * @param node         the node the scheduler chose
     */
    @JsonPropertyOrder({"PodName", "PodNamespace", "PodUID", "Node"})
    public record BindingArgs(@JsonProperty("PodName") String podName,
                              @JsonProperty("PodNamespace") String podNamespace,
                              @JsonProperty("PodUID") String podUid,
                              @JsonProperty("Node") String node) {
    }

    /**
     * {@code ExtenderBindingResult}: empty {@code Error} on success.
     *
     * @param error why the binding failed, or empty
     */
    public record BindingResult(@JsonProperty("Error") String error) {
        public BindingResult {
            error = error == null ? "" : error;
        }

        public static BindingResult ok() {
            return new BindingResult("");
        }
    }

    /**
     * {@code MetaPod}: a pod named by its UID.
     *
     * @param uid the pod's UID
     */
    public record MetaPod(@JsonProperty("UID") String uid) {
    }

    /**
     * {@code MetaVictims}: the pods to evict on one node, by UID, and how many PodDisruptionBudgets
     * evicting them violates.
     *
     * @param pods             the victims
     * @param numPdbViolations the count of PodDisruptionBudget violations
     */
    @JsonPropertyOrder({"Pods", "NumPDBViolations"})
    public record MetaVictims(@JsonProperty("Pods") List<MetaPod> pods,
                              @JsonProperty("NumPDBViolations") long numPdbViolations) {
        public MetaVictims {
            pods = pods == null ? List.of() : List.copyOf(pods);
        }
    }

    /**
     * {@code ExtenderPreemptionResult}: the candidate nodes the extender keeps, each with the victims
     * needed there. A node left out is one where preemption would not make room for the pod.
     *
     * @param nodeNameToMetaVictims node name to its victims
     */
    public record PreemptionResult(@JsonProperty("NodeNameToMetaVictims") Map<String, MetaVictims> nodeNameToMetaVictims) {
        public PreemptionResult {
            nodeNameToMetaVictims = nodeNameToMetaVictims == null ? Map.of()
                    : java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(nodeNameToMetaVictims));
        }
    }

    /**
     * The body of every 4xx answer: {@code {"Error": "..."}}. kube-scheduler reads only the status of
     * a non-200 answer; the message is for the people reading logs and curl output.
     *
     * @param error what was wrong with the request
     */
    public record ErrorBody(@JsonProperty("Error") String error) {
    }
}
