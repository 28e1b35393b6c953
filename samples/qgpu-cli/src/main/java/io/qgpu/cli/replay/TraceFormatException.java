package io.qgpu.cli.replay;

import io.qgpu.api.QgpuException;
import java.nio.file.Path;

/**
 * A trace CSV row that cannot be read: names the file, the line (1-based, the header is line 1),
 * the column as the header spells it, and the value found.
 *
 * <p>Thread safety: immutable.
 */
public final class TraceFormatException extends QgpuException {
    private static final long serialVersionUID = 1L;

    private final transient Path file;
    private final long line;
    private final String column;
    private final String value;

    public TraceFormatException(Path file, long line, String column, String value, String rule) {
        super(file + ":" + line + ": column " + column + ": '" + value + "' " + rule);
        this.file = file;
        this.line = line;
        this.column = column;
        this.value = value;
    }

    public Path file() {
        return file;
    }

    public long line() {
        return line;
    }

    public String column() {
        return column;
    }

    public String value() {
        return value;
    }
}
