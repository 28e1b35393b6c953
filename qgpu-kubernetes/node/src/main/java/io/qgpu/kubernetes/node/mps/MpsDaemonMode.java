package io.qgpu.kubernetes.node.mps;

import io.qgpu.api.InvalidValueException;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * Who starts a GPU's MPS control daemon when none answers ({@value #FLAG}). Either way the node agent adopts a
 * daemon that answers, sets the daemon-side limits, and never quits a daemon when it stops.
 *
 * <pre>{@code
 * MpsDaemonMode.parse("agent");   // AGENT
 * MpsDaemonMode.parse("pod");     // InvalidValueException: --mps-daemons = "pod": must be one of external, agent
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public enum MpsDaemonMode {
    /**
     * The daemons belong to their own DaemonSet ({@code deploy/mps-control-daemon.yaml}, which runs
     * {@link MpsControlDaemon}): the agent never starts or quits one; a GPU whose daemon does not answer fails its
     * reconcile step (and its shared claims) until the DaemonSet's pod has started it. The default.
     */
    EXTERNAL("external"),
    /**
     * The agent starts a daemon itself when none answers, restarts one that dies, and quits a GPU's daemon when
     * sharing stops on that GPU (for a node without the DaemonSet; the daemons then live in the agent's container).
     */
    AGENT("agent");

    /** The command-line flag. */
    public static final String FLAG = "--mps-daemons";

    private final String wireName;

    MpsDaemonMode(String wireName) {
        this.wireName = wireName;
    }

    /** The name on the command line: {@code external} or {@code agent}. */
    public String wireName() {
        return wireName;
    }

    /**
     * The mode a {@value #FLAG} value names, in any case.
     *
     * @throws InvalidValueException naming {@value #FLAG} and the value when it names none
     */
    public static MpsDaemonMode parse(String value) {
        if (value != null) {
            String v = value.trim().toLowerCase(Locale.ROOT);
            for (MpsDaemonMode m : values()) {
                if (m.wireName.equals(v)) {
                    return m;
                }
            }
        }
        throw new InvalidValueException(FLAG, value, "must be one of "
                + Arrays.stream(values()).map(MpsDaemonMode::wireName).collect(Collectors.joining(", ")));
    }
}
