package io.qgpu.cli.replay;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * What a trace holds that the replay accepts but the user should know before reading its numbers:
 * GPU models the memory table does not know (taken as {@link TraceMapping#DEFAULT_MEMORY_GIB} GiB),
 * and pods whose {@code gpu_spec} names only models the node list lacks (they can never be placed).
 *
 * <p>Thread safety: stateless.
 */
public final class TraceChecks {

    private TraceChecks() {
    }

    /** The warnings, one line each, naming the file, the column and the values. */
    public static List<String> warnings(List<TraceNode> nodes, List<TracePod> pods, Path nodesFile, Path podsFile) {
        List<String> out = new ArrayList<>();
        Set<String> models = new LinkedHashSet<>();
        Set<String> unknown = new TreeSet<>();
        for (TraceNode n : nodes) {
            if (n.gpus() > 0) {
                models.add(n.model());
                if (!TraceMapping.knowsMemoryOf(n.model())) {
                    unknown.add(n.model());
                }
            }
        }
        if (!unknown.isEmpty()) {
            out.add(nodesFile + ": column model: " + String.join(", ", unknown) + (unknown.size() == 1 ? " is" : " are")
                    + " not in the memory table (" + String.join(", ", TraceMapping.knownModels()) + "): taken as "
                    + TraceMapping.DEFAULT_MEMORY_GIB + " GiB per GPU");
        }
        Map<String, Integer> missing = new TreeMap<>();
        int unplaceable = 0;
        for (TracePod p : pods) {
            if (p.gpus() > 0 && !p.models().isEmpty() && p.models().stream().noneMatch(models::contains)) {
                unplaceable++;
                missing.merge(String.join("|", new TreeSet<>(p.models())), 1, Integer::sum);
            }
        }
        if (unplaceable > 0) {
            StringBuilder sb = new StringBuilder();
            missing.forEach((m, c) -> sb.append(sb.length() == 0 ? "" : ", ").append(m).append(" (").append(c).append(c == 1 ? " pod)" : " pods)"));
            out.add(podsFile + ": column gpu_spec: " + unplaceable + " pod(s) ask only for GPU models no node has (" + sb
                    + "; the nodes have " + String.join(", ", models) + "): they can never be placed");
        }
        return out;
    }
}
