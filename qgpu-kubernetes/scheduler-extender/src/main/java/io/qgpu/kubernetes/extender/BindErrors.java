package io.qgpu.kubernetes.extender;

import io.qgpu.api.NodeRejection;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.Reason;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The error answers of {@code bind}, and their log lines. The answer carries the whole reason (the
 * scheduler records it on the pod); the WARN line is bounded: at most {@value #WARN_CHARS} characters
 * of the reason, and for a node that refused the pod its first reason and how many more there are.
 * The whole reason is logged at DEBUG. A refusal names every GPU's reasons, kilobytes on a big node,
 * and under load, when pods in flight race for the last room on a node, one line per lost race.
 *
 * <p>Thread safety: stateless; safe from any thread.
 */
final class BindErrors {
    private static final Logger LOG = LoggerFactory.getLogger(GpuExtender.class);

    /** The most characters of a reason the WARN line shows. */
    static final int WARN_CHARS = 240;

    private BindErrors() {
    }

    /** An error answer, logged at WARN (bounded) and DEBUG (whole). */
    static ExtenderProtocol.BindingResult error(String message) {
        LOG.warn("bind: {}", bounded(message));
        if (message.length() > WARN_CHARS) {
            LOG.debug("bind: {}", message);
        }
        return new ExtenderProtocol.BindingResult(message);
    }

    /** The answer when the chosen node cannot take the pod (another pod took the room since filter, most often). */
    static ExtenderProtocol.BindingResult refused(String tenant, String node, PlacementResult.Unschedulable u) {
        String answer = refusal(tenant, node, u);
        LOG.warn("bind: {}", warnLine(tenant, node, u));
        LOG.debug("bind: {}", answer);
        return new ExtenderProtocol.BindingResult(answer);
    }

    /** The whole reason: the node's refusal with every GPU's reasons. */
    static String refusal(String tenant, String node, PlacementResult.Unschedulable u) {
        NodeRejection r = u.nodes().get(node);
        return "node " + node + " cannot take pod " + tenant + ": " + (r != null ? r.summary() : u.summary());
    }

    /** The WARN line's text: the node's first reason (bounded) and how many more there are. */
    static String warnLine(String tenant, String node, PlacementResult.Unschedulable u) {
        NodeRejection r = u.nodes().get(node);
        List<Reason> all = r != null ? r.all() : List.of();
        String head = "node " + node + " cannot take pod " + tenant + ": ";
        return all.isEmpty() ? head + bounded(u.summary())
                : head + bounded(all.get(0).message()) + (all.size() > 1 ? " (and " + (all.size() - 1) + " more reason(s), at DEBUG)" : "");
    }

    /** At most {@link #WARN_CHARS} characters, with how many were left out. */
    static String bounded(String s) {
        return s.length() <= WARN_CHARS ? s : s.substring(0, WARN_CHARS) + "... (" + (s.length() - WARN_CHARS) + " more characters)";
    }
}
