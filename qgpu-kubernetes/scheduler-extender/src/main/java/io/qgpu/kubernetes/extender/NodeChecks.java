package io.qgpu.kubernetes.extender;

import io.qgpu.api.Claim;
import io.qgpu.api.Reason;
import io.qgpu.api.Validate;
import io.qgpu.core.placement.NodeFit;
import io.qgpu.core.placement.PlacementEngine;
import java.util.List;

/**
 * Whether each named node can take a claim now, in the order asked, as
 * {@link PlacementEngine#check} decides it: the total the engine ranks a fitting node by, or the one
 * reason a node is refused for. The extender's filter and prioritize ask through this, so that a memo
 * ({@link FitCache}) can stand in for the engine.
 *
 * <p>Thread safety: implementations are thread-safe.
 */
@FunctionalInterface
interface NodeChecks {

    Checked check(Claim claim, List<String> nodeNames);

    /** The engine itself. */
    static NodeChecks of(PlacementEngine engine) {
        Validate.notNull("engine", engine);
        return (claim, names) -> Checked.of(names, engine.check(claim, names));
    }

    /**
     * The answers, by the index of the name asked.
     *
     * @param names      the names asked, in order
     * @param totals     the engine's total for a fitting node; {@code NaN} for a refused one
     * @param reasons    why a node is refused; {@code null} for a fitting one
     * @param resolvable for a refused node, true when it is known that the node could take the claim if
     *                   it were empty (preemption could help: filter's {@code FailedNodes}); false when
     *                   that is not known or not so (filter finds out: {@code GpuExtender.refusal})
     * @param messages   for a refused node, its reason's {@link Reason#message()} where already written
     *                   (a memo keeps it with the reason); null entries are written when asked
     */
    record Checked(List<String> names, double[] totals, Reason[] reasons, boolean[] resolvable, String[] messages) {
        /** Answers without messages written yet. */
        Checked(List<String> names, double[] totals, Reason[] reasons, boolean[] resolvable) {
            this(names, totals, reasons, resolvable, new String[totals.length]);
        }

        /** Answers that say nothing of whether a refused node could take the claim empty. */
        Checked(List<String> names, double[] totals, Reason[] reasons) {
            this(names, totals, reasons, new boolean[totals.length]);
        }

        /** The refused node's reason as one line ({@link Reason#message()}), written once. */
        String message(int j) {
            String m = messages[j];
            if (m == null) {
                m = reasons[j].message();
                messages[j] = m;
            }
            return m;
        }

        static Checked of(List<String> names, List<NodeFit> fits) {
            double[] totals = new double[fits.size()];
            Reason[] reasons = new Reason[fits.size()];
            for (int j = 0; j < totals.length; j++) {
                if (fits.get(j) instanceof NodeFit.Fits f) {
                    totals[j] = f.total();
                } else {
                    totals[j] = Double.NaN;
                    reasons[j] = ((NodeFit.Refused) fits.get(j)).reason();
                }
            }
            return new Checked(names, totals, reasons);
        }

        int size() {
            return totals.length;
        }

        String name(int j) {
            return names.get(j);
        }

        boolean fits(int j) {
            return reasons[j] == null;
        }

        double total(int j) {
            return totals[j];
        }

        Reason reason(int j) {
            return reasons[j];
        }

        /** See the record's {@code resolvable}. */
        boolean resolvable(int j) {
            return resolvable[j];
        }
    }
}
