package io.qgpu.testkit.invariants;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.Slice;
import io.qgpu.json.Inventory;
import io.qgpu.testkit.machines.FakeCluster;
import io.qgpu.testkit.machines.Machines;
import io.qgpu.testkit.property.Op;
import io.qgpu.testkit.property.PropertyScenario;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Replay and CheckedScheduler on tiny hand-written schedulers. */
class ReplayTest {

    private final Inventory oneT4 = FakeCluster.of(Machines.GN7_2XLARGE32);
    private final String gpu = oneT4.nodes().get(0).gpus().get(0).uuid();

    /** Puts everything on the one GPU without looking, and forgets nothing. */
    private class Greedy implements SchedulerUnderTest {
        final Set<String> released = new HashSet<>();

        @Override
        public PlacementResult place(Claim c) {
            long mem = c.exclusive() ? 16 * GpuDevice.GIB : c.memoryPerGpuBytes();
            return new PlacementResult.Placed(new Placement(c, "gn7-1xt4-0",
                    List.of(new Slice(gpu, mem, c.computeRequest(), c.computeLimit()))));
        }

        @Override
        public void release(String tenantId) {
            released.add(tenantId);
        }
    }

    private static Op place(String id, int gib) {
        return new Op.Place(Claim.builder(id).memoryGiB(gib).build());
    }

    @Test
    void replayStopsAtTheFirstBrokenStepAndSaysWhy() {
        PropertyScenario s = new PropertyScenario(oneT4, List.of(place("t0", 8), place("t1", 8), new Op.Release("t0"), place("t2", 8),
                place("t3", 1)));
        Replay.Report r = Replay.run((rules, nodes) -> new Greedy(), s);
        assertEquals(4, r.failedStep(), "16 GiB fits, a release frees 8, and then 17 GiB does not");
        assertEquals(Invariant.MEMORY, r.violations().get(0).invariant());
        assertEquals(Set.of("t1", "t2", "t3"), r.live().keySet());
        AssertionError e = assertThrows(AssertionError.class, r::assertNoViolations);
        assertTrue(e.getMessage().startsWith("after step 4 (place t3: 1 GPU x 1 GiB, compute 0/100, offline)"), e.getMessage());
        assertTrue(e.getMessage().contains("3: place t2: 1 GPU x 8 GiB, compute 0/100, offline -> placed on [gn7-1xt4-0/gpu0]"),
                e.getMessage());
        assertEquals(4, r.placed());
    }

    @Test
    void answersAboutAnotherClaimOrThrowingAreProtocolViolations() {
        SchedulerUnderTest wrongTenant = new Greedy() {
            @Override
            public PlacementResult place(Claim c) {
                return new PlacementResult.Unschedulable("someone-else", Map.of(), List.of());
            }
        };
        PropertyScenario s = new PropertyScenario(oneT4, List.of(place("t0", 1)));
        assertEquals(Invariant.PROTOCOL, Replay.run((r, n) -> wrongTenant, s).violations().get(0).invariant());
        SchedulerUnderTest throwing = new Greedy() {
            @Override
            public PlacementResult place(Claim c) {
                throw new IllegalStateException("boom");
            }
        };
        Violation v = Replay.run((r, n) -> throwing, s).violations().get(0);
        assertEquals(Invariant.PROTOCOL, v.invariant());
        assertTrue(v.message().contains("place threw java.lang.IllegalStateException: boom"), v.message());
    }

    @Test
    void determinismComparesTwoFreshRuns() {
        int[] calls = {0};
        SchedulerFactory alternating = (rules, nodes) -> {
            boolean odd = calls[0]++ % 2 == 1;
            return new Greedy() {
                @Override
                public PlacementResult place(Claim c) {
                    return odd ? new PlacementResult.Unschedulable(c.tenantId(), Map.of(), List.of()) : super.place(c);
                }
            };
        };
        PropertyScenario s = new PropertyScenario(oneT4, List.of(place("t0", 1)));
        List<Violation> v = Replay.determinism(alternating, s);
        assertEquals(1, v.size());
        assertTrue(v.get(0).toString().contains("first run placed on [gn7-1xt4-0/gpu0], second run unschedulable"), v.toString());
        assertEquals(List.of(), Replay.determinism((r, n) -> new Greedy(), s));
    }

    @Test
    void releaseRestoresCapacityProbesEveryHealthyGpuWhole() {
        PropertyScenario s = new PropertyScenario(oneT4, List.of(place("t0", 4)));
        // Greedy ignores releases and places the probe on top of nothing: fine since it "forgets" state,
        // but a scheduler that keeps the released tenant's memory refuses the probe
        SchedulerFactory leaky = (rules, nodes) -> new Greedy() {
            boolean used;

            @Override
            public PlacementResult place(Claim c) {
                if (c.exclusive() && used) {
                    return new PlacementResult.Unschedulable(c.tenantId(), Map.of(), List.of());
                }
                used = true;
                return super.place(c);
            }
        };
        List<Violation> v = Replay.releaseRestoresCapacity(leaky, s);
        assertEquals(Invariant.CAPACITY_RESTORED, v.get(0).invariant());
        assertTrue(v.get(0).message().contains("after releasing all 1 live tenants, whole-GPU probe 1 of 1"), v.toString());
        assertEquals(List.of(), Replay.releaseRestoresCapacity((r, n) -> new Greedy(), s));
    }

    @Test
    void completenessNeedsAnAnswerThatMatchesFeasibility() {
        SchedulerFactory refuser = (rules, nodes) -> new Greedy() {
            @Override
            public PlacementResult place(Claim c) {
                return new PlacementResult.Unschedulable(c.tenantId(), Map.of(), List.of());
            }
        };
        Claim fits = Claim.builder("c").memoryGiB(16).build();
        assertEquals(Invariant.COMPLETENESS, Replay.completeness(refuser, oneT4, fits).get(0).invariant());
        assertEquals(List.of(), Replay.completeness((r, n) -> new Greedy(), oneT4, fits));
        Claim tooBig = Claim.builder("big").memoryGiB(17).build();
        List<Violation> v = Replay.completeness((r, n) -> new Greedy(), oneT4, tooBig);
        assertTrue(v.stream().anyMatch(x -> x.invariant() == Invariant.COMPLETENESS
                && x.message().contains("cannot fit (no node has 1 usable GPUs (best 0)) but was placed")), v::toString);
    }

    @Test
    void checkedSchedulerFailsFastWithTheHistory() {
        CheckedScheduler s = CheckedScheduler.create((rules, nodes) -> new Greedy(), oneT4);
        Placement p = s.placed(Claim.builder("a").memoryGiB(10).build());
        assertEquals(List.of(0), s.gpuIndices(p));
        AssertionError refused = assertThrows(AssertionError.class,
                () -> s.refused(Claim.builder("b").memoryGiB(4).build(), "just to see the message"));
        assertTrue(refused.getMessage().startsWith("expected b: 1 GPU x 4 GiB, compute 0/100, offline to be refused"
                + " (just to see the message), but it was placed on [gn7-1xt4-0/gpu0]"), refused.getMessage());
        AssertionError broken = assertThrows(AssertionError.class, () -> s.place(Claim.builder("c").memoryGiB(4).build()));
        assertTrue(broken.getMessage().contains("[MEMORY]"), broken.getMessage());
        assertTrue(broken.getMessage().contains("history:\n    place a: 1 GPU x 10 GiB"), broken.getMessage());
    }

    @Test
    void notPlacedAcceptsATypedErrorButNoOtherException() {
        SchedulerFactory typed = (rules, nodes) -> new Greedy() {
            @Override
            public PlacementResult place(Claim c) {
                throw new InvalidValueException("claim.memoryPerGpuBytes", c.memoryPerGpuBytes(), "off the grid");
            }
        };
        CheckedScheduler.create(typed, oneT4).notPlaced(Claim.builder("x").memoryBytes(GpuDevice.MIB).build(), "off grid");
        SchedulerFactory npe = (rules, nodes) -> new Greedy() {
            @Override
            public PlacementResult place(Claim c) {
                throw new NullPointerException();
            }
        };
        AssertionError e = assertThrows(AssertionError.class, () -> CheckedScheduler.create(npe, oneT4)
                .notPlaced(Claim.builder("x").memoryBytes(GpuDevice.MIB).build(), "off grid"));
        assertTrue(e.getMessage().contains("with an unschedulable answer or a typed QgpuException"), e.getMessage());
        AssertionError nullFactory = assertThrows(AssertionError.class,
                () -> CheckedScheduler.create((GranularityRules r, List<Node> n) -> null, oneT4));
        assertEquals("the scheduler factory returned null", nullFactory.getMessage());
    }
}
