package io.qgpu.kubernetes.node.mps;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Optional;

/**
 * A fake {@code nvidia-cuda-mps-control} the tests write into a temporary directory. It records every call
 * (with {@code CUDA_VISIBLE_DEVICES}, {@code CUDA_MPS_PIPE_DIRECTORY}, {@code CUDA_MPS_LOG_DIRECTORY}) as a
 * line of its record file. {@code -d} leaves a detached background process (a {@code sleep}) as "the daemon"
 * and writes its pid to {@code nvidia-cuda-mps-control.pid} in the pipe directory, as the real daemon does;
 * a second {@code -d} while it lives fails. Without arguments it reads one command from stdin:
 * {@code get_server_list} succeeds while the daemon process lives, {@code quit} ends it; without a live
 * daemon every command fails (exit 1), as the real tool does when it cannot reach its daemon.
 */
final class FakeMpsControlScript {
    static final String PID_FILE = "nvidia-cuda-mps-control.pid";

    final Path binary;
    final Path record;

    private FakeMpsControlScript(Path binary, Path record) {
        this.binary = binary;
        this.record = record;
    }

    static FakeMpsControlScript write(Path dir) throws IOException {
        Path record = dir.resolve("mps-control-calls.txt");
        Files.writeString(record, "");
        Path bin = dir.resolve("nvidia-cuda-mps-control");
        String script = String.join("\n",
                "#!/bin/sh",
                "RECORD='" + record + "'",
                "pipe=\"${CUDA_MPS_PIPE_DIRECTORY:-/tmp/nvidia-mps}\"",
                "pidfile=\"$pipe/" + PID_FILE + "\"",
                "alive() {",
                "  [ -f \"$pidfile\" ] || return 1",
                "  s=$(awk '{print $3}' \"/proc/$(cat \"$pidfile\")/stat\" 2>/dev/null)",
                "  [ -n \"$s\" ] && [ \"$s\" != Z ]",
                "}",
                "if [ \"$1\" = \"-d\" ]; then",
                "  echo \"start visible=${CUDA_VISIBLE_DEVICES:-} pipe=${CUDA_MPS_PIPE_DIRECTORY:-} log=${CUDA_MPS_LOG_DIRECTORY:-}\" >> \"$RECORD\"",
                "  if alive; then echo 'An instance of this daemon is already running'; exit 1; fi",
                "  sleep 100000 </dev/null >/dev/null 2>&1 &",
                "  echo $! > \"$pidfile\"",
                "  exit 0",
                "fi",
                "read -r cmd",
                "echo \"command $cmd visible=${CUDA_VISIBLE_DEVICES:-} pipe=${CUDA_MPS_PIPE_DIRECTORY:-} log=${CUDA_MPS_LOG_DIRECTORY:-}\" >> \"$RECORD\"",
                "if alive; then",
                "  case \"$cmd\" in",
                "    quit) kill \"$(cat \"$pidfile\")\"; rm -f \"$pidfile\" ;;",
                "  esac",
                "  exit 0",
                "fi",
                "echo 'Cannot find MPS control daemon process' >&2",
                "exit 1",
                "");
        Files.writeString(bin, script, StandardCharsets.UTF_8);
        Files.setPosixFilePermissions(bin, PosixFilePermissions.fromString("rwxr-xr-x"));
        return new FakeMpsControlScript(bin, record);
    }

    /** The recorded calls, one per line. */
    List<String> calls() throws IOException {
        return Files.readAllLines(record).stream().filter(l -> !l.isBlank()).toList();
    }

    /** The pid of the GPU's fake daemon, if its pid file exists. */
    static Optional<Long> daemonPid(MpsLayout layout, String gpu) throws IOException {
        Path f = layout.pipeDir(gpu).resolve(PID_FILE);
        if (!Files.exists(f)) {
            return Optional.empty();
        }
        return Optional.of(Long.parseLong(Files.readString(f).trim()));
    }

    /** Whether a process runs (exists and is not a zombie), by the same rule as the fake. */
    static boolean running(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
            String afterName = stat.substring(stat.lastIndexOf(')') + 2);
            return afterName.charAt(0) != 'Z';
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * Kills a fake daemon (SIGKILL, by its pid) and waits until it no longer runs: a crash. The wait is on
     * the kernel delivering the signal, bounded at 10 s; nothing depends on how long it takes.
     */
    static void crash(long pid) throws InterruptedException {
        ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (running(pid)) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("process " + pid + " still runs 10 s after SIGKILL");
            }
            Thread.sleep(5);
        }
    }
}
