package io.qgpu.testkit.invariants;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Selectors;
import io.qgpu.api.Validate;
import io.qgpu.json.Inventory;
import io.qgpu.testkit.property.Describe;
import io.qgpu.testkit.property.Op;
import io.qgpu.testkit.property.PropertyScenario;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Drives a scheduler under test through operations and judges it with the independent oracles:
 * after every step the live placements must keep every {@link PlacementInvariants invariant}, and
 * every answer must be about the claim asked for. Also the behavioural checks that need a
 * scheduler: {@link #determinism}, {@link #releaseRestoresCapacity} and {@link #completeness}.
 *
 * <pre>{@code
 * SchedulerFactory factory = (rules, nodes) -> new MyAdapter(rules, nodes);
 * Property.forAll(QgpuGens.scenarios(InventoryOptions.defaults(), ClaimOptions.defaults(), 40))
 *         .verify(s -> Replay.run(factory, s).assertNoViolations());
 * Violation.assertNone("determinism", Replay.determinism(factory, scenario));
 * }</pre>
 *
 * <p>Thread safety: stateless; each call drives its own scheduler instances on the calling thread.
 */
public final class Replay {

    private Replay() {
    }

    /**
     * One step: the operation and, for a place, the scheduler's answer; {@code answer} says it in
     * words, naming GPUs as {@code node/gpuN}.
     */
    public record Step(int index, Op op, Optional<PlacementResult> result, String answer) {
        @Override
        public String toString() {
            return index + ": " + op + (answer.isEmpty() ? "" : " -> " + answer);
        }
    }

    /**
     * What a run did: the steps taken, the placements live at the end, and the violations found at
     * the first step that broke something ({@code failedStep}, or -1); the run stops there.
     */
    public record Report(PropertyScenario scenario, List<Step> steps, Map<String, Placement> live, List<Violation> violations,
                         int failedStep) {
        public Report {
            steps = List.copyOf(steps);
            live = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(live));
            violations = List.copyOf(violations);
        }

        public boolean ok() {
            return violations.isEmpty();
        }

        /** Placements made (results {@link PlacementResult.Placed}). */
        public long placed() {
            return steps.stream().filter(s -> s.result().filter(r -> r instanceof PlacementResult.Placed).isPresent()).count();
        }

        /** Throws an {@link AssertionError} naming the failed step, the steps before it and the violations. */
        public void assertNoViolations() {
            if (ok()) {
                return;
            }
            StringBuilder sb = new StringBuilder("after step ").append(failedStep).append(" (")
                    .append(scenario.ops().get(failedStep)).append(')');
            sb.append("\nsteps:");
            for (Step s : steps) {
                sb.append("\n    ").append(s);
            }
            throw new AssertionError(Violation.render(sb.toString(), violations));
        }
    }

    /** Runs the scenario's operations on a fresh scheduler from {@code factory}. */
    public static Report run(SchedulerFactory factory, PropertyScenario scenario) {
        Validate.notNull("replay.factory", factory);
        Validate.notNull("replay.scenario", scenario);
        Inventory inv = scenario.inventory();
        return run(factory.create(inv.rules(), inv.nodes()), scenario);
    }

    /** Runs the scenario's operations on {@code scheduler}, which must be fresh over the scenario's inventory. */
    public static Report run(SchedulerUnderTest scheduler, PropertyScenario scenario) {
        Validate.notNull("replay.scheduler", scheduler);
        Inventory inv = scenario.inventory();
        Map<String, String> names = gpuNames(inv);
        Map<String, Placement> live = new LinkedHashMap<>();
        List<Step> steps = new ArrayList<>();
        List<Op> ops = scenario.ops();
        for (int i = 0; i < ops.size(); i++) {
            Op op = ops.get(i);
            List<Violation> found = new ArrayList<>();
            if (op instanceof Op.Place place) {
                Optional<PlacementResult> r = place(scheduler, place.claim(), live, found);
                steps.add(new Step(i, op, r, r.map(x -> describe(x, names)).orElse("no answer")));
                if (found.isEmpty()) {
                    found.addAll(PlacementInvariants.check(inv, live.values()));
                }
            } else {
                Op.Release release = (Op.Release) op;
                try {
                    scheduler.release(release.tenantId());
                } catch (RuntimeException e) {
                    found.add(new Violation(Invariant.PROTOCOL, release.tenantId(), "release threw " + e));
                }
                live.remove(release.tenantId());
                steps.add(new Step(i, op, Optional.empty(), ""));
            }
            if (!found.isEmpty()) {
                return new Report(scenario, steps, live, found, i);
            }
        }
        return new Report(scenario, steps, live, List.of(), -1);
    }

    /**
     * Places {@code claim} and checks the answer is about it: the same tenant, the claim unchanged,
     * not placed twice. Adds a placed claim to {@code live}.
     */
    static Optional<PlacementResult> place(SchedulerUnderTest scheduler, Claim claim, Map<String, Placement> live,
                                           List<Violation> found) {
        String t = claim.tenantId();
        PlacementResult r;
        try {
            r = scheduler.place(claim);
        } catch (RuntimeException e) {
            found.add(new Violation(Invariant.PROTOCOL, t, "place threw " + e + " for " + Describe.claim(claim)));
            return Optional.empty();
        }
        if (r == null) {
            found.add(new Violation(Invariant.PROTOCOL, t, "place returned null"));
            return Optional.empty();
        }
        if (!r.tenantId().equals(t)) {
            found.add(new Violation(Invariant.PROTOCOL, t, "the answer is about tenant " + r.tenantId()));
        }
        if (r instanceof PlacementResult.Placed placed) {
            Placement p = placed.placement();
            if (!p.claim().equals(claim)) {
                found.add(new Violation(Invariant.PROTOCOL, t, "placed " + Describe.claim(p.claim())
                        + " instead of the claim asked for, " + Describe.claim(claim)));
            }
            if (live.containsKey(p.tenantId())) {
                found.add(new Violation(Invariant.DUPLICATE_TENANT, t, "placed again while its placement "
                        + Describe.placement(live.get(p.tenantId())) + " is live"));
            } else {
                live.put(p.tenantId(), p);
            }
        }
        return Optional.of(r);
    }

    /**
     * Runs the scenario on two fresh schedulers and reports the first step where they answer
     * differently (placed against unschedulable, or different placements).
     */
    public static List<Violation> determinism(SchedulerFactory factory, PropertyScenario scenario) {
        Report a = run(factory, scenario);
        Report b = run(factory, scenario);
        Map<String, String> names = gpuNames(scenario.inventory());
        int n = Math.min(a.steps().size(), b.steps().size());
        for (int i = 0; i < n; i++) {
            Optional<PlacementResult> ra = a.steps().get(i).result();
            Optional<PlacementResult> rb = b.steps().get(i).result();
            if (!sameOutcome(ra, rb)) {
                Op op = scenario.ops().get(i);
                return List.of(new Violation(Invariant.DETERMINISM, "step " + i, op + ": first run "
                        + ra.map(r -> describe(r, names)).orElse("no answer") + ", second run "
                        + rb.map(r -> describe(r, names)).orElse("no answer")));
            }
        }
        if (a.steps().size() != b.steps().size()) {
            return List.of(new Violation(Invariant.DETERMINISM, "run", "first run took " + a.steps().size()
                    + " steps, second " + b.steps().size()));
        }
        return List.of();
    }

    private static boolean sameOutcome(Optional<PlacementResult> a, Optional<PlacementResult> b) {
        if (a.isEmpty() || b.isEmpty()) {
            return a.isEmpty() && b.isEmpty();
        }
        PlacementResult x = a.get();
        PlacementResult y = b.get();
        if (x instanceof PlacementResult.Placed px && y instanceof PlacementResult.Placed py) {
            return px.placement().equals(py.placement());
        }
        return x.getClass() == y.getClass();
    }

    /**
     * Runs the scenario, releases every live tenant, and then asks for every healthy GPU whole (an
     * exclusive claim per GPU; GPUs kept for a class are asked for by UUID first, with their class).
     * Every probe must be placed, and every answer must keep the invariants: capacity that was
     * reserved and released is free again, on every GPU.
     */
    public static List<Violation> releaseRestoresCapacity(SchedulerFactory factory, PropertyScenario scenario) {
        Inventory inv = scenario.inventory();
        SchedulerUnderTest scheduler = factory.create(inv.rules(), inv.nodes());
        Report r = run(scheduler, scenario);
        if (!r.ok()) {
            return r.violations();
        }
        List<Violation> found = new ArrayList<>();
        for (String t : new ArrayList<>(r.live().keySet())) {
            try {
                scheduler.release(t);
            } catch (RuntimeException e) {
                found.add(new Violation(Invariant.PROTOCOL, t, "release threw " + e));
            }
        }
        if (!found.isEmpty()) {
            return found;
        }
        List<Claim> probes = new ArrayList<>();
        int unreserved = 0;
        for (Node n : inv.nodes()) {
            for (GpuDevice g : n.gpus()) {
                if (!g.healthy()) {
                    continue;
                }
                if (g.reservedFor().isPresent()) {
                    probes.add(Claim.builder("probe-" + g.uuid()).exclusive().priority(g.reservedFor().get())
                            .selectors(Selectors.builder().includeUuid(g.uuid()).build()).build());
                } else {
                    unreserved++;
                }
            }
        }
        for (int i = 0; i < unreserved; i++) {
            probes.add(Claim.builder("probe-" + i).exclusive().priority(PriorityClass.OFFLINE).build());
        }
        Map<String, Placement> live = new LinkedHashMap<>();
        for (Claim probe : probes) {
            Optional<PlacementResult> answer = place(scheduler, probe, live, found);
            if (!found.isEmpty()) {
                return found;
            }
            if (answer.isPresent() && answer.get() instanceof PlacementResult.Unschedulable u) {
                found.add(new Violation(Invariant.CAPACITY_RESTORED, probe.tenantId(), "after releasing all "
                        + r.live().size() + " live tenants, whole-GPU probe " + (probes.indexOf(probe) + 1) + " of "
                        + probes.size() + " (" + Describe.claim(probe) + ") was refused: " + u.summary()));
                return found;
            }
            found.addAll(PlacementInvariants.check(inv, live.values()));
            if (!found.isEmpty()) {
                return found;
            }
        }
        return found;
    }

    /**
     * Places one claim on a fresh scheduler and reports a violation when it is placed although it
     * does not fit the empty cluster, or refused although it does ({@link Feasibility}).
     */
    public static List<Violation> completeness(SchedulerFactory factory, Inventory inventory, Claim claim) {
        SchedulerUnderTest scheduler = factory.create(inventory.rules(), inventory.nodes());
        List<Violation> found = new ArrayList<>();
        Map<String, Placement> live = new LinkedHashMap<>();
        Optional<PlacementResult> r = place(scheduler, claim, live, found);
        if (!found.isEmpty() || r.isEmpty()) {
            return found;
        }
        found.addAll(PlacementInvariants.check(inventory, live.values()));
        Optional<String> whyNot = Feasibility.whyNot(inventory.rules(), inventory.nodes(), claim);
        if (whyNot.isEmpty() && r.get() instanceof PlacementResult.Unschedulable u) {
            found.add(new Violation(Invariant.COMPLETENESS, Describe.claim(claim),
                    "fits the empty cluster but was refused: " + u.summary()));
        } else if (whyNot.isPresent() && r.get() instanceof PlacementResult.Placed p) {
            found.add(new Violation(Invariant.COMPLETENESS, Describe.claim(claim),
                    "cannot fit (" + whyNot.get() + ") but was " + describe(p, gpuNames(inventory))));
        }
        return found;
    }

    /** {@code placed on [node/gpu0, node/gpu1]} or {@code unschedulable}; unknown GPUs by UUID. */
    static String describe(PlacementResult r, Map<String, String> gpuNames) {
        if (r instanceof PlacementResult.Placed p) {
            return "placed on " + p.placement().gpuUuids().stream().map(u -> gpuNames.getOrDefault(u, u)).toList();
        }
        return "unschedulable";
    }

    /** GPU UUID to {@code node/gpuN}. */
    static Map<String, String> gpuNames(Inventory inv) {
        Map<String, String> names = new java.util.HashMap<>();
        for (Node n : inv.nodes()) {
            for (GpuDevice g : n.gpus()) {
                names.put(g.uuid(), n.name() + "/gpu" + g.index());
            }
        }
        return names;
    }
}
