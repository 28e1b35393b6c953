package io.qgpu.samples.gpuprobe;

/**
 * A command-line flag the probe refuses: names the flag as the user wrote it, the value and the rule,
 * for example {@code --seconds = "abc": must be a number of seconds above 0 and at most 3600}.
 *
 * <p>Thread safety: immutable.
 */
public final class UsageException extends Exception {
    private static final long serialVersionUID = 1L;

    private final String flag;
    private final String value;

    public UsageException(String flag, String value, String rule) {
        super(flag + " = " + (value == null ? "(missing)" : "\"" + value + "\"") + ": " + rule);
        this.flag = flag;
        this.value = value;
    }

    /** The flag as written, for example {@code --chunk-mib}. */
    public String flag() {
        return flag;
    }

    /** The value as written; {@code null} when the flag had none. */
    public String value() {
        return value;
    }
}
