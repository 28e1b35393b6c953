package io.qgpu.kubernetes.node;

import io.qgpu.nvml.NvmlLibraryException;
import java.io.File;
import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The start-up checks the node agents share, each failing with an {@link IllegalArgumentException} whose message
 * is one line naming the flag and the value as the user wrote them: Kubernetes node names, executables, libraries,
 * writable state directories, the fake NVML library's machines, and the line for an NVML library that cannot be
 * loaded.
 *
 * <pre>{@code
 * AgentChecks.nodeName("--node-name", "Node_A");                  // refused: not a DNS subdomain
 * AgentChecks.writableFile("--state-file", "/ro/state.json", Path.of("/ro/state.json"));
 * AgentChecks.executable("--mps-control", "nvidia-cuda-mps-control", System.getenv("PATH"));
 * }</pre>
 *
 * <p>Thread safety: stateless.
 */
public final class AgentChecks {
    /** The machines the fake NVML library plays (qgpu-nvml/src/test/c/fake_nvml.c), in its order. */
    public static final List<String> FAKE_MACHINES = List.of("dgx-h100", "t4x4", "a100-bridged", "a100-mig", "x86-numa", "h100-vm");

    private AgentChecks() {
    }

    /** Refuses a node name Kubernetes would not take. */
    public static String nodeName(String flag, String name) {
        if (!io.qgpu.api.Validate.isDnsSubdomain(name)) {
            throw new IllegalArgumentException(flag + " " + name + ": must be a DNS subdomain (lower-case letters, digits, '-' and '.')");
        }
        return name;
    }

    /** Refuses a {@code --machine} the fake NVML library does not play, listing those it does. */
    public static String fakeMachine(String machine) {
        if (!FAKE_MACHINES.contains(machine)) {
            throw new IllegalArgumentException("--machine " + machine + ": the fake NVML library plays " + String.join(", ", FAKE_MACHINES));
        }
        return machine;
    }

    /**
     * A program given as a path (it must be an executable file) or as a name (it must be an executable file in one
     * of the {@code PATH}'s directories).
     */
    public static void executable(String flag, String value, String pathVariable) {
        if (value.contains("/")) {
            Path p = Path.of(value);
            if (!Files.exists(p)) {
                throw new IllegalArgumentException(flag + " " + value + ": no such file");
            }
            if (Files.isDirectory(p)) {
                throw new IllegalArgumentException(flag + " " + value + ": is a directory, not a program");
            }
            if (!Files.isExecutable(p)) {
                throw new IllegalArgumentException(flag + " " + value + ": not executable (chmod +x, or give the program's path)");
            }
            return;
        }
        if (pathVariable != null) {
            for (String dir : pathVariable.split(File.pathSeparator)) {
                if (!dir.isEmpty()) {
                    Path p = Path.of(dir, value);
                    if (Files.isRegularFile(p) && Files.isExecutable(p)) {
                        return;
                    }
                }
            }
        }
        throw new IllegalArgumentException(flag + " " + value + ": not found on the PATH (" + (pathVariable == null ? "" : pathVariable)
                + "); give the program's path");
    }

    /**
     * With {@code --sharing mps --mps-daemons agent} the agent starts {@code --mps-control} itself: it must be an
     * executable file (a path) or be found on the {@code PATH} (a name). Nothing is checked otherwise.
     */
    public static void sharingPrograms(io.qgpu.kubernetes.node.sharing.SharingOptions s, String pathVariable) {
        if (s.backend() == io.qgpu.kubernetes.node.sharing.SharingBackend.MPS
                && s.mpsDaemons() == io.qgpu.kubernetes.node.mps.MpsDaemonMode.AGENT) {
            executable("--mps-control", s.mpsControl().toString(), pathVariable);
        }
    }

    /** A library file: it must exist, be a file and be readable. */
    public static void library(String flag, String value) {
        Path p = Path.of(value);
        if (!Files.exists(p)) {
            throw new IllegalArgumentException(flag + " " + value + ": no such file");
        }
        if (!Files.isRegularFile(p)) {
            throw new IllegalArgumentException(flag + " " + value + ": not a file");
        }
        if (!Files.isReadable(p)) {
            throw new IllegalArgumentException(flag + " " + value + ": cannot be read (permission denied)");
        }
    }

    /**
     * A file the agent keeps its state in: not a directory, and its directory (created when missing) must take a new
     * file, which is checked by creating and removing a probe file: this catches a read-only file system and a
     * directory of another user even when the agent runs as root.
     *
     * @param label the flag and the value as written ({@code --state-file /x/s.json}), or words naming the default
     */
    public static void writableFile(String label, Path file) {
        if (Files.isDirectory(file)) {
            throw new IllegalArgumentException(label + ": is a directory, not a file");
        }
        Path dir = file.toAbsolutePath().getParent();
        if (dir == null) {
            return;
        }
        String d = writableDirectoryProblem(dir).orElse(null);
        if (d != null) {
            throw new IllegalArgumentException(label + ": its directory " + d);
        }
        if (Files.exists(file) && !Files.isWritable(file)) {
            throw new IllegalArgumentException(label + ": cannot be written (permission denied)");
        }
    }

    /**
     * A state file at start: {@link #writableFile} and, when it exists, readable JSON (what the JSON holds is the
     * agent's reader's to check), said in the user's terms: the label, "is not valid JSON", the line and column.
     *
     * @param fix what to do about a file that is not JSON ("fix or remove the file (...)")
     */
    public static void stateFile(String label, Path file, String fix) {
        writableFile(label, file);
        if (!Files.exists(file)) {
            return;
        }
        try {
            io.qgpu.json.JsonInput.read(file, "");
        } catch (io.qgpu.json.QgpuJsonException e) {
            throw new IllegalArgumentException(label + ": " + e.rule()
                    + (e.line() > 0 ? " (line " + e.line() + ", column " + e.column() + ")" : "") + "; " + fix);
        }
    }

    /**
     * A directory the agent writes into ({@code --cdi-root}): created when missing, and it must take a new file.
     */
    public static void writableDirectory(String flag, Path dir) {
        if (Files.exists(dir) && !Files.isDirectory(dir)) {
            throw new IllegalArgumentException(flag + " " + dir + ": not a directory");
        }
        writableDirectoryProblem(dir).ifPresent(p -> {
            throw new IllegalArgumentException(flag + " " + dir + ": " + p.substring(dir.toString().length() + 1));
        });
    }

    /** Why a directory cannot take a new file: "DIR cannot be created (...)", "DIR is not writable (...)"; else empty. */
    static Optional<String> writableDirectoryProblem(Path dir) {
        for (Path p = dir; p != null; p = p.getParent()) {
            if (Files.exists(p) && !Files.isDirectory(p)) {
                return Optional.of(dir + " cannot be created (" + p + " is a file, not a directory)");
            }
            if (Files.isDirectory(p)) {
                break;
            }
        }
        if (!Files.isDirectory(dir)) {
            try {
                Files.createDirectories(dir);
            } catch (IOException e) {
                return Optional.of(dir + " cannot be created (" + reason(e) + ")");
            }
        }
        Path probe = dir.resolve(".qgpu-write-probe-" + ProcessHandle.current().pid());
        try {
            Files.deleteIfExists(probe);
            Files.createFile(probe);
            Files.delete(probe);
        } catch (IOException e) {
            return Optional.of(dir + " is not writable (" + reason(e) + ")");
        }
        return Optional.empty();
    }

    private static String reason(IOException e) {
        if (e instanceof AccessDeniedException) {
            return "permission denied";
        }
        if (e instanceof FileSystemException f && f.getReason() != null) {
            return f.getReason().toLowerCase(java.util.Locale.ROOT);
        }
        return e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    }

    /**
     * One line for an NVML library that could not be loaded, naming the agent's flag {@code --nvml-lib} (not the
     * NVML binding's system property).
     *
     * @param library {@code --nvml-lib}'s value, empty when the flag was not given
     */
    public static String nvmlLoadFailure(NvmlLibraryException e, Optional<String> library) {
        if (library.isPresent()) {
            return "--nvml-lib " + library.get() + ": cannot be loaded as the NVML library (" + loadProblem(e)
                    + "); give the path of libnvidia-ml.so.1";
        }
        return "no NVML library (libnvidia-ml.so.1) on this machine: is the NVIDIA driver installed? Give its path with"
                + " --nvml-lib PATH (to try without a GPU: --nvml-lib qgpu-nvml/target/fake-nvml/libnvidia-ml.so.1 --machine t4x4)";
    }

    /** What the loader said, without the binding's own hints (they name a system property, not the agent's flag). */
    static String loadProblem(NvmlLibraryException e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof UnsatisfiedLinkError u && u.getMessage() != null) {
                return firstLine(u.getMessage()).replaceAll("\\s*Native library \\(.*", "").trim();
            }
        }
        String m = firstLine(e.getMessage() == null ? "" : e.getMessage());
        int hint = m.indexOf(". Is the NVIDIA driver installed");
        return hint > 0 ? m.substring(0, hint) : m;
    }

    private static String firstLine(String s) {
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }
}
