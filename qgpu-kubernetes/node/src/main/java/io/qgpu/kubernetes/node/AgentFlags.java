package io.qgpu.kubernetes.node;

import io.qgpu.api.GranularityRules;
import io.qgpu.api.InvalidValueException;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;

/**
 * The command-line flags the node agents (the device plugin and the DRA driver) share and read the
 * same way: {@code --rules} and {@code --recover-after}. A bad value is an
 * {@link IllegalArgumentException} naming the flag and the value as the user wrote them.
 *
 * <pre>{@code
 * Map<String, String> opts = Map.of("--rules", "hami", "--recover-after", "300");
 * GranularityRules rules = AgentFlags.rules(opts).orElseThrow();
 * Duration after = AgentFlags.recoverAfter(opts).orElseThrow();   // 300 s
 * }</pre>
 *
 * <p>Thread safety: stateless.
 */
public final class AgentFlags {
    private AgentFlags() {
    }

    /** {@code --rules}: a preset of {@link GranularityRules#preset}; empty when the flag is absent. */
    public static Optional<GranularityRules> rules(Map<String, String> opts) {
        if (!opts.containsKey("--rules")) {
            return Optional.empty();
        }
        try {
            return Optional.of(GranularityRules.preset(opts.get("--rules")));
        } catch (InvalidValueException e) {
            throw new IllegalArgumentException("--rules " + opts.get("--rules") + ": must be qgpu, hami or gpu-manager");
        }
    }

    /** {@code --recover-after}: a whole number of seconds, at least 1; empty when the flag is absent. */
    public static Optional<Duration> recoverAfter(Map<String, String> opts) {
        if (!opts.containsKey("--recover-after")) {
            return Optional.empty();
        }
        String v = opts.get("--recover-after");
        long seconds;
        try {
            seconds = Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--recover-after " + v + ": must be a whole number of seconds");
        }
        if (seconds < 1) {
            throw new IllegalArgumentException("--recover-after " + v + ": must be at least 1");
        }
        return Optional.of(Duration.ofSeconds(seconds));
    }
}
