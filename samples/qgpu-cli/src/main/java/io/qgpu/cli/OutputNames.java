package io.qgpu.cli;

import io.qgpu.api.InvalidValueException;
import java.nio.charset.StandardCharsets;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;

/**
 * The one rule for names that become file names. A name read from a file (a scenario's {@code name},
 * a GPU id in {@code share-<gpu>.png}) becomes a single path component inside the output folder or is
 * refused: it may not be empty, {@code .} or {@code ..}, hold a separator ({@code /}, {@code \}), a
 * drive colon ({@code :}) or a control character (a NUL byte included), and the file name it makes
 * must fit 255 bytes. A path the user typed ({@code --out}, {@code --snapshot}) is taken as written
 * (it is the user's choice where to write) but a control character in it is refused with the flag.
 * Every command that makes a file name goes through here, so {@code ../../x} never leaves the folder.
 *
 * <p>Thread safety: stateless.
 */
final class OutputNames {

    /** Longest file name (in UTF-8 bytes) most file systems take. */
    static final int MAX_FILE_NAME_BYTES = 255;

    private OutputNames() {
    }

    /**
     * {@code dir/prefix + name + suffix}, where {@code name} came from the user's input under {@code key}.
     *
     * @throws InvalidValueException naming {@code key} and the value when the name cannot be one file name
     */
    static Path file(Path dir, String prefix, String key, String name, String suffix) {
        String component = prefix + component(key, name) + suffix;
        if (component.getBytes(StandardCharsets.UTF_8).length > MAX_FILE_NAME_BYTES) {
            throw new InvalidValueException(key, shown(name), "makes the file name " + prefix + "<" + key + ">" + suffix
                    + " longer than " + MAX_FILE_NAME_BYTES + " bytes; use a shorter name");
        }
        return dir.resolve(component);
    }

    /**
     * {@code name} itself when it can be one path component.
     *
     * @throws InvalidValueException naming {@code key} and the value (control characters shown escaped)
     */
    static String component(String key, String name) {
        String why = problem(name);
        if (why != null) {
            throw new InvalidValueException(key, shown(name), why + "; it becomes a file name, so it must be one name "
                    + "inside the output folder (no '/', '\\', ':', '.' or '..' alone, no control characters)");
        }
        if (name.getBytes(StandardCharsets.UTF_8).length > MAX_FILE_NAME_BYTES) {
            throw new InvalidValueException(key, shown(name), "is longer than " + MAX_FILE_NAME_BYTES + " bytes");
        }
        return name;
    }

    /** A path the user typed after {@code flag}; refused only when it holds a control character or the system refuses it. */
    static Path userPath(String flag, String value) {
        for (int i = 0; i < value.length(); i++) {
            if (Character.isISOControl(value.charAt(i))) {
                throw new InvalidValueException(flag, shown(value), "holds a control character at position " + (i + 1)
                        + "; give a path without one");
            }
        }
        if (value.isEmpty()) {
            throw new InvalidValueException(flag, value, "is empty; give a path");
        }
        try {
            return Path.of(value);
        } catch (InvalidPathException e) {
            throw new InvalidValueException(flag, shown(value), "is not a path this system accepts (" + e.getReason() + ")");
        }
    }

    private static String problem(String name) {
        if (name == null || name.isEmpty()) {
            return "is empty";
        }
        if (name.equals(".") || name.equals("..")) {
            return "names a folder, not a file";
        }
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (c == '/' || c == '\\') {
                return "holds the separator '" + c + "'";
            }
            if (c == ':') {
                return "holds ':' (a drive or stream name on Windows)";
            }
            if (Character.isISOControl(c)) {
                return "holds a control character at position " + (i + 1);
            }
        }
        return null;
    }

    /** The value with control characters written as {@code \\uXXXX}, so that a message never carries them raw. */
    static String shown(String value) {
        if (value == null) {
            return null;
        }
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (Character.isISOControl(c)) {
                sb.append(String.format("\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        return sb.toString();
    }
}
