package io.qgpu.api;

import java.util.ArrayList;
import java.util.Collection;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * How many nodes refused a claim for one cause, in the spirit of kube-scheduler's
 * {@code "0/4000 nodes are available: 2950 insufficient GPU memory, 1050 no free whole GPU"}.
 * Each refused node counts once, under the code of its first reason (see
 * {@link PlacementResult.Unschedulable#causes()}).
 *
 * <pre>{@code
 * CauseCount c = new CauseCount(ReasonCode.INSUFFICIENT_MEMORY, 2950);
 * c.cause();     // "insufficient GPU memory"
 * c.message();   // "2950 insufficient GPU memory"
 * }</pre>
 *
 * @param code  the cause
 * @param nodes how many nodes it refused (at least 1)
 *
 * <p>Thread safety: immutable.
 */
public record CauseCount(ReasonCode code, int nodes) {

    public CauseCount {
        Validate.notNull("causeCount.code", code);
        Validate.atLeast("causeCount.nodes", nodes, 1);
    }

    /** The cause in words, for the one-line summary. */
    public String cause() {
        return phrase(code);
    }

    /** {@code "<nodes> <cause>"}. */
    public String message() {
        return nodes + " " + cause();
    }

    /** A reason code in the words of the aggregated summary. */
    public static String phrase(ReasonCode code) {
        return switch (Validate.notNull("code", code)) {
            case INSUFFICIENT_MEMORY -> "insufficient GPU memory";
            case INSUFFICIENT_COMPUTE -> "insufficient guaranteed compute";
            case TOO_MANY_TENANTS -> "no free tenant slot";
            case MIG_INSTANCE_IN_USE -> "MIG instance in use";
            case UNHEALTHY -> "unhealthy GPUs";
            case EXCLUSIVE -> "no free whole GPU";
            case RESERVED_FOR_OTHER_CLASS -> "GPUs kept for the other class";
            case MODEL_NOT_SELECTED -> "GPU model not selected";
            case UUID_NOT_SELECTED -> "GPU UUID not selected";
            case NODE_LABELS_MISMATCH -> "node labels mismatch";
            case ANTI_AFFINITY -> "anti-affinity";
            case EXCLUSION -> "other exclusion label";
            case AFFINITY -> "affinity bound elsewhere";
            case NOT_ENOUGH_GPUS -> "too few usable GPUs";
            case NUMA -> "no usable GPU set on one NUMA node";
            case MUST_INCLUDE -> "must-include GPU unusable";
            case CONFLICT -> "unstable filters";
            case INSUFFICIENT_CPU -> "insufficient CPU";
            case INSUFFICIENT_HOST_MEMORY -> "insufficient host memory";
            default -> code.name().toLowerCase(Locale.ROOT).replace('_', ' ');
        };
    }

    /**
     * The counts of {@code rejections}, each node under the code of its first reason (node reasons
     * first, as {@link NodeRejection#all()} orders them), most nodes first (ties: enum order).
     * Nodes without any reason are not counted.
     */
    public static List<CauseCount> tally(Collection<NodeRejection> rejections) {
        Validate.notNull("rejections", rejections);
        Map<ReasonCode, Integer> counts = new EnumMap<>(ReasonCode.class);
        for (NodeRejection r : rejections) {
            List<Reason> all = r.all();
            if (!all.isEmpty()) {
                counts.merge(all.get(0).code(), 1, Integer::sum);
            }
        }
        return ordered(counts);
    }

    /** {@code counts} as a list, most nodes first (ties: enum order), zero counts left out. */
    public static List<CauseCount> ordered(Map<ReasonCode, Integer> counts) {
        List<CauseCount> out = new ArrayList<>(counts.size());
        for (Map.Entry<ReasonCode, Integer> e : counts.entrySet()) {
            if (e.getValue() > 0) {
                out.add(new CauseCount(e.getKey(), e.getValue()));
            }
        }
        out.sort((a, b) -> a.nodes != b.nodes ? Integer.compare(b.nodes, a.nodes) : a.code.compareTo(b.code));
        return List.copyOf(out);
    }
}
