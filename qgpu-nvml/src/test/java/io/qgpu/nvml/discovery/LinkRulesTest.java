package io.qgpu.nvml.discovery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.qgpu.api.GpuLink;
import io.qgpu.api.TopologyLevel;
import java.util.SplittableRandom;
import java.util.function.IntBinaryOperator;
import org.junit.jupiter.api.Test;
import org.opentest4j.AssertionFailedError;

/** The pair rules on their own, and a seeded property over random link counts. */
class LinkRulesTest {
    private static final IntBinaryOperator SYS = (a, b) -> TopologyLevel.SYSTEM.nvmlValue();

    @Test
    void directLanes() {
        int[][] direct = {{0, 4, 0}, {4, 0, 0}, {0, 0, 0}};
        int[] sw = {0, 0, 0};
        assertEquals(new GpuLink.NvLink(4), LinkRules.link(0, 1, direct, sw, SYS));
        assertEquals(new GpuLink.Pcie(TopologyLevel.SYSTEM), LinkRules.link(0, 2, direct, sw, SYS));
    }

    @Test
    void switchLanesNeedBothSides() {
        int[][] none = new int[3][3];
        int[] sw = {18, 12, 0};
        assertEquals(new GpuLink.NvLink(12, TopologyLevel.SYSTEM, true), LinkRules.link(0, 1, none, sw, SYS));
        assertEquals(new GpuLink.Pcie(TopologyLevel.SYSTEM), LinkRules.link(0, 2, none, sw, SYS));
    }

    @Test
    void directAndSwitchAddUp() {
        int[][] direct = {{0, 2}, {2, 0}};
        assertEquals(new GpuLink.NvLink(6, TopologyLevel.SYSTEM, true), LinkRules.link(0, 1, direct, new int[] {4, 6}, SYS));
    }

    @Test
    void anNvLinkPairKeepsItsPcieLevelAndWhetherItGoesThroughASwitch() {
        int[][] direct = {{0, 1}, {1, 0}};
        IntBinaryOperator pxb = (a, b) -> TopologyLevel.MULTIPLE.nvmlValue();
        assertEquals(new GpuLink.NvLink(1, TopologyLevel.MULTIPLE, false), LinkRules.link(0, 1, direct, new int[2], pxb));
        assertEquals(new GpuLink.NvLink(12, TopologyLevel.MULTIPLE, true),
                LinkRules.link(0, 1, new int[2][2], new int[] {12, 12}, pxb));
        assertEquals(new GpuLink.NvLink(1, TopologyLevel.SYSTEM, false),
                LinkRules.link(0, 1, direct, new int[2], (a, b) -> LinkRules.UNKNOWN_LEVEL));
        assertEquals(new GpuLink.Pcie(TopologyLevel.SINGLE),
                LinkRules.link(0, 1, new int[2][2], new int[2], (a, b) -> 10));
    }

    @Test
    void anUnknownAncestorIsSys() {
        assertEquals(new GpuLink.Pcie(TopologyLevel.SYSTEM),
                LinkRules.link(0, 1, new int[2][2], new int[2], (a, b) -> LinkRules.UNKNOWN_LEVEL));
    }

    /** A deliberately wrong rule: trusts one direction of the direct counts only. */
    static GpuLink oneSided(int a, int b, int[][] direct, int[] sw, IntBinaryOperator ancestor) {
        int lanes = direct[a][b] + (sw[a] > 0 && sw[b] > 0 ? Math.min(sw[a], sw[b]) : 0);
        return lanes > 0 ? new GpuLink.NvLink(lanes) : new GpuLink.Pcie(TopologyLevel.fromNvml(ancestor.applyAsInt(a, b)));
    }

    interface Rule {
        GpuLink link(int a, int b, int[][] direct, int[] sw, IntBinaryOperator ancestor);
    }

    /** Symmetry, and NVLink exactly when both sides see a direct link or both reach a switch. */
    static void checkProperties(Rule rule, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        for (int round = 0; round < 500; round++) {
            int n = 2 + rnd.nextInt(7);
            int[][] direct = new int[n][n];
            int[] sw = new int[n];
            for (int a = 0; a < n; a++) {
                sw[a] = rnd.nextInt(3) == 0 ? rnd.nextInt(19) : 0;
                for (int b = 0; b < n; b++) {
                    if (a != b && rnd.nextInt(3) == 0) {
                        direct[a][b] = rnd.nextInt(7);
                    }
                }
            }
            IntBinaryOperator anc = (a, b) -> 10 * (1 + (a + b) % 5);
            for (int a = 0; a < n; a++) {
                for (int b = a + 1; b < n; b++) {
                    GpuLink ab = rule.link(a, b, direct, sw, anc);
                    GpuLink ba = rule.link(b, a, direct, sw, anc);
                    if (!ab.equals(ba)) {
                        throw new AssertionFailedError("seed " + seed + " round " + round + ": " + a + "-" + b + " is " + ab
                                + " but " + b + "-" + a + " is " + ba);
                    }
                    boolean nv = (direct[a][b] > 0 && direct[b][a] > 0) || (sw[a] > 0 && sw[b] > 0);
                    if (nv != (ab instanceof GpuLink.NvLink)) {
                        throw new AssertionFailedError("seed " + seed + " round " + round + ": " + a + "-" + b + " is " + ab);
                    }
                }
            }
        }
    }

    @Test
    void pairsAreSymmetric() {
        long seed = Long.getLong("qgpu.seed", 42L);
        checkProperties(LinkRules::link, seed);
    }

    @Test
    void thePropertyCatchesAOneSidedRule() {
        assertThrows(AssertionFailedError.class, () -> checkProperties(LinkRulesTest::oneSided, 42L));
    }
}
