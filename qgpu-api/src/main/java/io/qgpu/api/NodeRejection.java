package io.qgpu.api;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * Why one node could not take a claim: reasons about the node itself, and for each GPU the
 * reasons it could not hold a slice. In the spirit of the scheduler extender's {@code FailedNodes}.
 *
 * @param nodeName    the node
 * @param nodeReasons reasons about the node as a whole (labels, not enough usable GPUs)
 * @param gpuReasons  per GPU UUID, why it was unusable
 *
 * <p>Thread safety: immutable.
 */
public record NodeRejection(String nodeName, List<Reason> nodeReasons, Map<String, List<Reason>> gpuReasons) {

    public NodeRejection {
        Validate.notBlank("rejection.nodeName", nodeName);
        nodeReasons = Validate.list("rejection[" + nodeName + "].nodeReasons", nodeReasons);
        Validate.notNull("rejection[" + nodeName + "].gpuReasons", gpuReasons);
        gpuReasons = gpuReasons.entrySet().stream().collect(Collectors.toUnmodifiableMap(Map.Entry::getKey,
                e -> List.copyOf(e.getValue())));
    }

    /** Every reason, node ones first. */
    public List<Reason> all() {
        List<Reason> all = new ArrayList<>(nodeReasons);
        gpuReasons.values().forEach(all::addAll);
        return all;
    }

    /** One line: the node reasons, then each GPU's reasons. */
    public String summary() {
        return all().stream().map(Reason::message).collect(Collectors.joining("; "));
    }
}
