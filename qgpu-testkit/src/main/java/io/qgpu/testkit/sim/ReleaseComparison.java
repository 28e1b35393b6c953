package io.qgpu.testkit.sim;

import io.qgpu.api.Validate;
import io.qgpu.core.preempt.ReleasePolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * One scenario run under several release rules: fixed delays and the adaptive rule, each summed up
 * as the offline GPU share it gave against the online wait p99 it cost. The fixed delays trace a
 * frontier; a rule sits on or above it when no fixed delay gives more offline time at the same or a
 * lower online p99 ({@link #dominating}).
 *
 * <pre>{@code
 * ReleaseComparison c = ReleaseComparison.run(Simulator.standard(), scenario, ReleaseComparison.DEFAULT_DELAYS,
 *         ReleaseComparison.adaptiveFor(scenario));
 * c.adaptive().offlineShare();
 * c.dominating(c.adaptive(), ReleaseComparison.FRONTIER_TOLERANCE);   // empty: on or above the frontier
 * }</pre>
 *
 * @param scenario what was run (its own release rule is replaced in each run)
 * @param fixed    one point per fixed delay, in the order given
 * @param adaptive the adaptive rule's point
 *
 * <p>Thread safety: immutable.
 */
public record ReleaseComparison(Scenario scenario, List<Point> fixed, Point adaptive) {

    /** Fixed delays from 0 to 200 ms. */
    public static final List<Duration> DEFAULT_DELAYS = List.of(Duration.ZERO, Duration.ofMillis(5), Duration.ofMillis(10),
            Duration.ofMillis(20), Duration.ofMillis(50), Duration.ofMillis(100), Duration.ofMillis(150), Duration.ofMillis(200));

    /**
     * How much more offline share (0.1 point of the GPU) a fixed delay must give to count as beating
     * a rule: below that, runs that differ only in when grants fall relative to a quota window differ
     * by noise (a fixed-share GPU's offline share moves by about 0.06 point between delays).
     */
    public static final double FRONTIER_TOLERANCE = 0.001;

    /** The longest hold the adaptive rule may pick here: the longest fixed delay compared. */
    public static final Duration MAX_HOLD = Duration.ofMillis(200);

    public ReleaseComparison {
        Validate.notNull("releaseComparison.scenario", scenario);
        fixed = List.copyOf(fixed);
        Validate.notNull("releaseComparison.adaptive", adaptive);
    }

    /**
     * A release rule's result.
     *
     * @param rule               {@link ReleasePolicy#describe()}
     * @param offlineShare       offline GPU time over all GPUs / (duration x GPUs)
     * @param onlineWaitP99Nanos the largest of the GPUs' online wait p99 ({@link GpuMetrics#onlineWaitP99Nanos()}),
     *                           -1 if no online work was submitted
     * @param releaseIdleShare   time the GPUs sat idle in the release delay while offline work waited /
     *                           (duration x GPUs)
     */
    public record Point(String rule, double offlineShare, long onlineWaitP99Nanos, double releaseIdleShare) {
    }

    /**
     * The adaptive rule for {@code scenario}: a switch costs twice the scenario's switch time in GPU
     * time (suspend and resume), the hold is at most {@link #MAX_HOLD}.
     */
    public static ReleasePolicy adaptiveFor(Scenario scenario) {
        return ReleasePolicy.adaptive(Duration.ofNanos(2 * scenario.cost().switchNanos()), MAX_HOLD);
    }

    /** Runs {@code scenario} under each fixed delay and under {@code adaptive}. */
    public static ReleaseComparison run(Simulator simulator, Scenario scenario, List<Duration> delays, ReleasePolicy adaptive) {
        Validate.notNull("releaseComparison.simulator", simulator);
        Validate.notNull("releaseComparison.delays", delays);
        List<Point> fixed = new ArrayList<>();
        for (Duration d : delays) {
            fixed.add(point(simulator, scenario, ReleasePolicy.fixed(d)));
        }
        return new ReleaseComparison(scenario, fixed, point(simulator, scenario, adaptive));
    }

    /** Runs {@code scenario} with {@code policy} as its release rule and sums the result up. */
    public static Point point(Simulator simulator, Scenario scenario, ReleasePolicy policy) {
        Scenario s = scenario.withPreemption(scenario.preemption().toBuilder().releasePolicy(policy).build());
        SimResult r = simulator.run(s);
        double offline = 0;
        double releaseIdle = 0;
        long p99 = -1;
        for (GpuMetrics g : r.gpus()) {
            offline += g.offlineShare();
            releaseIdle += (double) g.releaseIdleNanos() / s.durationNanos();
            p99 = Math.max(p99, g.onlineWaitP99Nanos());
        }
        int n = r.gpus().size();
        return new Point(policy.describe(), offline / n, p99, releaseIdle / n);
    }

    /**
     * The fixed-delay points that beat {@code p}: more offline share than {@code p} by more than
     * {@code tolerance} (a fraction of the GPU, e.g. 0.001 = 0.1 point), at the same or a lower
     * online wait p99. Empty when {@code p} is on or above the fixed-delay frontier.
     */
    public List<Point> dominating(Point p, double tolerance) {
        List<Point> out = new ArrayList<>();
        for (Point f : fixed) {
            if (f.offlineShare() > p.offlineShare() + tolerance && f.onlineWaitP99Nanos() <= p.onlineWaitP99Nanos()) {
                out.add(f);
            }
        }
        return out;
    }

    /** The fixed-delay point of {@code delay}. */
    public Point fixedPoint(Duration delay) {
        String rule = ReleasePolicy.fixed(delay).describe();
        return fixed.stream().filter(f -> f.rule().equals(rule)).findFirst()
                .orElseThrow(() -> new io.qgpu.api.InvalidValueException("releaseComparison.delay", delay, "was not compared"));
    }
}
