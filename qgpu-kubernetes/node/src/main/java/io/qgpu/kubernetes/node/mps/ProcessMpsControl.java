package io.qgpu.kubernetes.node.mps;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link MpsControl} by running {@code nvidia-cuda-mps-control}: {@code -d} to start a GPU's daemon, and the
 * commands ({@code get_server_list}, {@code quit}, the limits' {@code set_*}) written to its standard input, each
 * with the GPU's
 * {@code CUDA_MPS_PIPE_DIRECTORY} and {@code CUDA_MPS_LOG_DIRECTORY} from the {@link MpsLayout} (the
 * pipe directory is how a command finds its daemon). The start also sets {@code CUDA_VISIBLE_DEVICES} to
 * the GPU's UUID, so that the daemon and the servers it spawns see that GPU only. Inherited
 * {@code CUDA_MPS_*} and {@code CUDA_VISIBLE_DEVICES} variables are replaced. Output goes to
 * {@code control-command.log} in the GPU's log directory (the daemon writes its own {@code control.log}
 * there); {@link #command} also returns a command's standard output. The daemon's pid is read from the pid file
 * it writes into the pipe directory ({@value #PID_FILE}).
 *
 * <p>Thread safety: thread-safe (each call runs its own process).
 */
public final class ProcessMpsControl implements MpsControl {
    private static final Logger LOG = LoggerFactory.getLogger(ProcessMpsControl.class);

    /** The program's name on the {@code PATH}. */
    public static final String BINARY = "nvidia-cuda-mps-control";
    /** The file the commands' output is appended to, in the GPU's log directory. */
    public static final String COMMAND_LOG = "control-command.log";
    /** The file in the pipe directory where the control daemon writes its process id. */
    public static final String PID_FILE = "nvidia-cuda-mps-control.pid";

    private final Path binary;
    private final MpsLayout layout;
    private final Duration timeout;

    /**
     * @param binary  {@code nvidia-cuda-mps-control}, a path or a name looked up on the {@code PATH}
     * @param layout  the GPUs' directories
     * @param timeout how long one command may take before it is killed and counts as failed
     */
    public ProcessMpsControl(Path binary, MpsLayout layout, Duration timeout) {
        this.binary = Objects.requireNonNull(binary, "binary");
        this.layout = Objects.requireNonNull(layout, "layout");
        this.timeout = Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout = " + timeout + ": must be positive");
        }
    }

    @Override
    public void start(String gpuUuid) throws IOException {
        Files.createDirectories(layout.pipeDir(gpuUuid));
        Files.createDirectories(layout.logDir(gpuUuid));
        int rc = run(gpuUuid, true, null);
        if (rc != 0) {
            throw new IOException(binary + " -d for GPU " + gpuUuid + " exited " + rc + " (see "
                    + layout.logDir(gpuUuid).resolve(COMMAND_LOG) + ")");
        }
    }

    @Override
    public boolean healthy(String gpuUuid) {
        try {
            return run(gpuUuid, false, "get_server_list") == 0;
        } catch (IOException e) {
            LOG.debug("MPS health check of GPU {} could not run: {}", gpuUuid, e.toString());
            return false;
        }
    }

    @Override
    public void quit(String gpuUuid) throws IOException {
        int rc = run(gpuUuid, false, "quit");
        if (rc != 0) {
            throw new IOException("quit to the MPS control daemon of GPU " + gpuUuid + ": " + binary + " exited " + rc);
        }
    }

    @Override
    public String command(String gpuUuid, String command) throws IOException {
        if (command == null || command.isBlank() || command.contains("\n") || command.contains("\r")) {
            throw new IllegalArgumentException("command = \"" + command + "\": must be one line");
        }
        Path out = Files.createTempFile(Files.createDirectories(layout.logDir(gpuUuid)), "command-", ".out");
        try {
            int rc = run(gpuUuid, false, command, out);
            if (rc != 0) {
                throw new IOException("'" + command + "' to the MPS control daemon of GPU " + gpuUuid + ": " + binary + " exited " + rc
                        + (rc == -1 ? " (timed out)" : ""));
            }
            return Files.readString(out, StandardCharsets.UTF_8);
        } finally {
            Files.deleteIfExists(out);
        }
    }

    @Override
    public Optional<Long> daemonPid(String gpuUuid) {
        try {
            String text = Files.readString(layout.pipeDir(gpuUuid).resolve(PID_FILE), StandardCharsets.US_ASCII).trim();
            return Optional.of(Long.parseLong(text));
        } catch (IOException | NumberFormatException e) {
            return Optional.empty();
        }
    }

    /** Runs the program with the GPU's environment, {@code -d} or one command on stdin; the exit code, -1 on timeout. */
    private int run(String gpuUuid, boolean daemon, String command) throws IOException {
        return run(gpuUuid, daemon, command, null);
    }

    /** As {@link #run(String, boolean, String)}, the command's standard output into {@code stdout} when given. */
    private int run(String gpuUuid, boolean daemon, String command, Path stdout) throws IOException {
        Path logDir = layout.logDir(gpuUuid);
        Files.createDirectories(logDir);
        ProcessBuilder pb = daemon ? new ProcessBuilder(binary.toString(), "-d") : new ProcessBuilder(binary.toString());
        Map<String, String> env = pb.environment();
        env.keySet().removeIf(k -> k.startsWith("CUDA_MPS_") || k.equals("CUDA_VISIBLE_DEVICES"));
        env.put("CUDA_MPS_PIPE_DIRECTORY", layout.pipeDir(gpuUuid).toString());
        env.put("CUDA_MPS_LOG_DIRECTORY", logDir.toString());
        if (daemon) {
            env.put("CUDA_VISIBLE_DEVICES", gpuUuid);
        }
        // to a file, not a pipe: the detached daemon inherits the descriptors and would hold a pipe open
        ProcessBuilder.Redirect log = ProcessBuilder.Redirect.appendTo(logDir.resolve(COMMAND_LOG).toFile());
        if (stdout == null) {
            pb.redirectErrorStream(true).redirectOutput(log);
        } else {
            pb.redirectError(log).redirectOutput(stdout.toFile());
        }
        if (daemon) {
            pb.redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        }
        Process p = pb.start();
        if (!daemon) {
            try (OutputStream in = p.getOutputStream()) {
                in.write((command + "\n").getBytes(StandardCharsets.US_ASCII));
            } catch (IOException e) {
                LOG.debug("writing '{}' to {}: {}", command, binary, e.toString());
            }
        }
        try {
            if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
                LOG.warn("{} {} for GPU {} did not finish in {}; killed", binary, daemon ? "-d" : command, gpuUuid, timeout);
                return -1;
            }
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while running " + binary, e);
        }
        return p.exitValue();
    }
}
