package io.qgpu.testkit.invariants;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.QgpuException;
import io.qgpu.api.Validate;
import io.qgpu.json.Inventory;
import io.qgpu.testkit.property.Describe;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A scheduler under test wrapped with the oracles, for example-based tests: every answer is
 * checked against the claim asked for and every placement against all
 * {@link PlacementInvariants invariants} of the live set; a broken rule fails at once with an
 * {@link AssertionError} that lists the violations and the history of calls.
 *
 * <pre>{@code
 * CheckedScheduler s = CheckedScheduler.create(factory, FakeCluster.of(Machines.GN7_2XLARGE32));
 * Placement p = s.placed(Claim.builder("t1").memoryGiB(10).build());   // must be placed
 * s.refused(Claim.builder("t2").memoryGiB(8).build(), "6 GiB left");   // must be unschedulable
 * s.release("t1");
 * s.gpuIndices(p);                                                   // [0]
 * }</pre>
 *
 * <p>Thread safety: not thread-safe; one test drives it.
 */
public final class CheckedScheduler {

    private final SchedulerUnderTest scheduler;
    private final Inventory inventory;
    private final Map<String, Placement> live = new LinkedHashMap<>();
    private final List<String> history = new ArrayList<>();
    private final Map<String, String> gpuNames = new HashMap<>();
    private final Map<String, Integer> gpuIndex = new HashMap<>();

    public CheckedScheduler(SchedulerUnderTest scheduler, Inventory inventory) {
        this.scheduler = Validate.notNull("checkedScheduler.scheduler", scheduler);
        this.inventory = Validate.notNull("checkedScheduler.inventory", inventory);
        for (Node n : inventory.nodes()) {
            for (GpuDevice g : n.gpus()) {
                gpuNames.put(g.uuid(), n.name() + "/gpu" + g.index());
                gpuIndex.put(g.uuid(), g.index());
            }
        }
    }

    /** A fresh scheduler from {@code factory} over the inventory, wrapped. */
    public static CheckedScheduler create(SchedulerFactory factory, Inventory inventory) {
        Validate.notNull("checkedScheduler.factory", factory);
        SchedulerUnderTest s = factory.create(inventory.rules(), inventory.nodes());
        if (s == null) {
            throw new AssertionError("the scheduler factory returned null");
        }
        return new CheckedScheduler(s, inventory);
    }

    public Inventory inventory() {
        return inventory;
    }

    /** The placements live now, by tenant, in order of placement. */
    public Map<String, Placement> live() {
        return Collections.unmodifiableMap(live);
    }

    /** Places the claim; fails on any broken invariant or an answer about another claim. */
    public PlacementResult place(Claim claim) {
        List<Violation> found = new ArrayList<>();
        Optional<PlacementResult> r = Replay.place(scheduler, claim, live, found);
        history.add("place " + Describe.claim(claim) + r.map(x -> " -> " + describe(x)).orElse(""));
        if (found.isEmpty()) {
            found.addAll(PlacementInvariants.check(inventory, live.values()));
        }
        if (!found.isEmpty()) {
            throw new AssertionError(Violation.render(context(), found));
        }
        return r.orElseThrow();
    }

    /** Places the claim and fails unless it was placed. */
    public Placement placed(Claim claim) {
        PlacementResult r = place(claim);
        if (r instanceof PlacementResult.Unschedulable u) {
            throw new AssertionError("expected " + Describe.claim(claim) + " to be placed, but it was refused: "
                    + u.summary() + "\n" + context());
        }
        return ((PlacementResult.Placed) r).placement();
    }

    /** Places the claim and fails unless it was refused (unschedulable). */
    public PlacementResult.Unschedulable refused(Claim claim, String why) {
        PlacementResult r = place(claim);
        if (r instanceof PlacementResult.Placed p) {
            throw new AssertionError("expected " + Describe.claim(claim) + " to be refused (" + why + "), but it was "
                    + describe(p) + "\n" + context());
        }
        return (PlacementResult.Unschedulable) r;
    }

    /**
     * Asks for a claim that must not be placed at all, accepting either an unschedulable answer or a
     * typed {@link QgpuException} (for example an {@link io.qgpu.api.InvalidValueException} for a
     * size off the grid); any other exception fails.
     */
    public void notPlaced(Claim claim, String why) {
        PlacementResult r;
        try {
            r = scheduler.place(claim);
        } catch (QgpuException e) {
            history.add("place " + Describe.claim(claim) + " -> threw " + e);
            return;
        } catch (RuntimeException e) {
            history.add("place " + Describe.claim(claim) + " -> threw " + e);
            throw new AssertionError("expected " + Describe.claim(claim) + " to be refused (" + why
                    + ") with an unschedulable answer or a typed QgpuException, but place threw " + e + "\n" + context(), e);
        }
        history.add("place " + Describe.claim(claim) + " -> " + (r == null ? "null" : describe(r)));
        if (r instanceof PlacementResult.Placed p) {
            live.put(p.tenantId(), p.placement());
            throw new AssertionError("expected " + Describe.claim(claim) + " to be refused (" + why + "), but it was "
                    + describe(p) + "\n" + context());
        }
        if (r == null) {
            throw new AssertionError("place returned null for " + Describe.claim(claim) + "\n" + context());
        }
    }

    /** Releases the tenant; fails if release throws. */
    public void release(String tenantId) {
        history.add("release " + tenantId);
        try {
            scheduler.release(tenantId);
        } catch (RuntimeException e) {
            throw new AssertionError("release(" + tenantId + ") threw " + e + "; releasing must be idempotent"
                    + " (an unknown or released tenant is a no-op)\n" + context(), e);
        }
        live.remove(tenantId);
    }

    /** NVML indices of the placement's GPUs, in slice order. */
    public List<Integer> gpuIndices(Placement p) {
        return p.gpuUuids().stream().map(u -> gpuIndex.getOrDefault(u, -1)).toList();
    }

    /** The node of the inventory with this name. */
    public Node node(String name) {
        return inventory.nodes().stream().filter(n -> n.name().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError("no node " + name + " in the inventory"));
    }

    private String describe(PlacementResult r) {
        if (r instanceof PlacementResult.Placed p) {
            return "placed on " + p.placement().gpuUuids().stream().map(u -> gpuNames.getOrDefault(u, u)).toList();
        }
        return "unschedulable";
    }

    private String context() {
        StringBuilder sb = new StringBuilder("history:");
        for (String h : history) {
            sb.append("\n    ").append(h);
        }
        return sb.toString();
    }
}
