package io.qgpu.kubernetes.node;

import io.qgpu.api.GranularityRules;
import io.qgpu.api.InvalidValueException;
import java.time.Duration;
import java.util.Set;
import java.util.List;
import java.util.LinkedHashMap;
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

    /**
     * {@code --api-timeout}: how long the start-up check of the API server may take ({@link ApiServerCheck}), a number
     * and a unit ({@code 10s}, {@code 500ms}), above zero and at most 10 minutes; the default when the flag is absent.
     */
    public static Duration apiTimeout(Map<String, String> opts) {
        String v = opts.get(ApiServerCheck.FLAG);
        if (v == null) {
            return ApiServerCheck.DEFAULT_TIMEOUT;
        }
        Duration d;
        try {
            d = io.qgpu.core.time.Durations.parse(ApiServerCheck.FLAG, v);
        } catch (InvalidValueException e) {
            throw new IllegalArgumentException(e.getMessage());
        }
        if (d.isZero() || d.isNegative() || d.compareTo(Duration.ofMinutes(10)) > 0) {
            throw new IllegalArgumentException(ApiServerCheck.FLAG + " " + v + ": must be above 0 and at most 10m");
        }
        return d;
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

    /** The largest {@code --recover-after}: 100 years in seconds (its nanoseconds, added to a clock's, stay in a long). */
    public static final long MAX_RECOVER_AFTER_SECONDS = 100L * 365 * 24 * 3600;

    /**
     * {@code --recover-after}: a whole number of seconds, at least 1 and at most {@value #MAX_RECOVER_AFTER_SECONDS};
     * empty when the flag is absent.
     */
    public static Optional<Duration> recoverAfter(Map<String, String> opts) {
        if (!opts.containsKey("--recover-after")) {
            return Optional.empty();
        }
        String v = opts.get("--recover-after");
        long seconds;
        try {
            seconds = Long.parseLong(v);
        } catch (NumberFormatException e) {
            if (v.matches("\\+?[0-9]+")) {
                seconds = Long.MAX_VALUE; // digits too many for a long: too large
            } else {
                throw new IllegalArgumentException("--recover-after " + v + ": must be a whole number of seconds");
            }
        }
        if (seconds < 1) {
            throw new IllegalArgumentException("--recover-after " + v + ": must be at least 1");
        }
        if (seconds > MAX_RECOVER_AFTER_SECONDS) {
            throw new IllegalArgumentException("--recover-after " + v + ": must be at most " + MAX_RECOVER_AFTER_SECONDS
                    + " (100 years)");
        }
        return Optional.of(Duration.ofSeconds(seconds));
    }

    /**
     * An agent's command line as options to values: each option takes a value, as the next argument or after
     * {@code =} ({@code --cdi-root=/var/run/cdi}); {@code --help} maps to {@code ""}. The one parser of the DRA driver and
     * the MPS control daemon.
     *
     * @param valued the options that take a value
     * @throws IllegalArgumentException naming the argument: unknown, without a value, with an empty value, or given twice
     */
    public static Map<String, String> parse(List<String> args, Set<String> valued) {
        Map<String, String> out = new LinkedHashMap<>();
        for (int i = 0; i < args.size(); i++) {
            String a = args.get(i);
            if ("--help".equals(a)) {
                out.put(a, "");
                continue;
            }
            String name = a;
            String value = null;
            int eq = a.indexOf('=');
            if (a.startsWith("--") && eq > 0) {
                name = a.substring(0, eq);
                value = a.substring(eq + 1);
            }
            if (!valued.contains(name)) {
                throw new IllegalArgumentException("unknown argument " + a);
            }
            if (value == null) {
                if (i + 1 >= args.size() || args.get(i + 1).startsWith("--")) {
                    throw new IllegalArgumentException(name + " needs a value");
                }
                value = args.get(++i);
            }
            if (value.isEmpty()) {
                throw new IllegalArgumentException(name + " \"\": must not be empty");
            }
            if (out.put(name, value) != null) {
                throw new IllegalArgumentException(name + " is given twice");
            }
        }
        return out;
    }
}
