package io.qgpu.json;

import io.qgpu.api.QgpuException;
import org.jspecify.annotations.Nullable;

/**
 * Input that is not what its format allows: malformed JSON, an unknown key, a value of the wrong
 * type or out of range, a missing required key, an empty or missing file. The message names the
 * source (a file name when there is one), the JSON path and the key as the user wrote them, the
 * value, the rule, and the line and column where the parser knows them, for example
 * {@code claims.json: claims[2].gpus = 0: must be between 1 and 1024 (line 14, column 13)}.
 *
 * <p>Thread safety: immutable.
 */
public final class QgpuJsonException extends QgpuException {
    private static final long serialVersionUID = 1L;
    private final String source;
    private final String path;
    private final String rule;
    private final int line;
    private final int column;

    /** An error without a source or position (kept for callers that only have a path and a message). */
    public QgpuJsonException(String path, String message, @Nullable Throwable cause) {
        this("", path, null, message, -1, -1, cause);
    }

    /**
     * @param source file name or other label of the input; empty when none
     * @param path   JSON path as the user wrote it, for example {@code nodes[0].gpus[1].memoryGiB}; empty for the whole input
     * @param value  the value as written in the input (JSON text), or {@code null} when there is none to show
     * @param rule   what is wrong, in words
     * @param line   1-based line, or -1 when unknown
     * @param column 1-based column, or -1 when unknown
     * @param cause  the underlying error, or {@code null}
     */
    public QgpuJsonException(String source, String path, @Nullable String value, String rule, int line, int column,
                             @Nullable Throwable cause) {
        super(render(source, path, value, rule, line, column), cause);
        this.source = source == null ? "" : source;
        this.path = path == null ? "" : path;
        this.rule = rule;
        this.line = line;
        this.column = column;
    }

    private static String render(String source, String path, @Nullable String value, String rule, int line, int column) {
        StringBuilder sb = new StringBuilder();
        if (source != null && !source.isEmpty()) {
            sb.append(source).append(": ");
        }
        if (path != null && !path.isEmpty()) {
            sb.append(path);
            if (value != null) {
                sb.append(" = ").append(value);
            }
            sb.append(": ");
        }
        sb.append(rule);
        if (line > 0) {
            sb.append(" (line ").append(line).append(", column ").append(column).append(')');
        }
        return sb.toString();
    }

    /** The file name or label of the input; empty when none was given. */
    public String source() {
        return source;
    }

    /** JSON path of the problem, for example {@code nodes[2].gpus[0].memoryGiB}; empty at top level. */
    public String path() {
        return path;
    }

    /** What is wrong, in words, without source, path or position. */
    public String rule() {
        return rule;
    }

    /** 1-based line of the problem, or -1 when unknown. */
    public int line() {
        return line;
    }

    /** 1-based column of the problem, or -1 when unknown. */
    public int column() {
        return column;
    }
}
