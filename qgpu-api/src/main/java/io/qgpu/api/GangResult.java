package io.qgpu.api;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Outcome of placing a {@link Gang}: every member committed ({@link Placed}) or none
 * ({@link Unschedulable}).
 *
 * <pre>{@code
 * if (placer.place(gang) instanceof GangResult.Unschedulable u) {
 *     u.members().get("train-7-1").failedNodes();   // per node, why that member did not fit
 * }
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public sealed interface GangResult {

    /** The gang's name. */
    String gang();

    /**
     * Every member was placed and committed.
     *
     * @param gang       the gang's name
     * @param placements one per member, in member order
     */
    record Placed(String gang, List<Placement> placements) implements GangResult {
        public Placed {
            Validate.notBlank("gangResult.gang", gang);
            placements = Validate.list("gangResult[" + gang + "].placements", placements);
        }
    }

    /**
     * Nothing was committed.
     *
     * @param gang    the gang's name
     * @param members per member tenant id, why it was not placed: the nodes that refused it, or a
     *                {@code GANG} reason when it would have fitted but the group did not
     * @param general reasons about the whole group (no node carries the scope's label, a member's id
     *                is already reserved, the commit lost its race too often)
     */
    record Unschedulable(String gang, Map<String, PlacementResult.Unschedulable> members, List<Reason> general)
            implements GangResult {
        public Unschedulable {
            Validate.notBlank("gangResult.gang", gang);
            members = Map.copyOf(Validate.notNull("gangResult[" + gang + "].members", members));
            general = Validate.list("gangResult[" + gang + "].general", general);
        }

        /** One line per reason: the general ones, then each member's (in tenant-id order). */
        public String summary() {
            StringBuilder sb = new StringBuilder("gang ").append(gang).append(" unschedulable");
            general.forEach(r -> sb.append("; ").append(r.message()));
            new TreeMap<>(members).values().forEach(u -> sb.append("; ").append(u.summary()));
            return sb.toString();
        }
    }
}
