package io.qgpu.kubernetes.node.mps;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * A fake {@code nvidia-cuda-mps-control} the tests write into a temporary directory. It records every call
 * (with {@code CUDA_VISIBLE_DEVICES}, {@code CUDA_MPS_PIPE_DIRECTORY}, {@code CUDA_MPS_LOG_DIRECTORY}) as a
 * line of its record file. {@code -d} leaves a detached background process (a {@code sleep}) as "the daemon"
 * and writes its pid to {@code nvidia-cuda-mps-control.pid} in the pipe directory, as the real daemon does;
 * a second {@code -d} while it lives fails. Without arguments it reads one command from stdin:
 * {@code get_server_list} prints the pids of {@value #SERVERS_FILE} ({@link #addServer}: "servers" the test says
 * run; none by default), {@code quit} ends the daemon and forgets its defaults and servers, the two
 * {@code set_default_*} commands keep their last value per command in {@value #DEFAULTS_FILE} ({@link #defaults}),
 * the two per-server {@code set_*} commands keep theirs per server in {@value #SERVER_LIMITS_FILE}
 * ({@link #serverLimits}) and fail for a pid that is not a running server; any other command fails. A new daemon
 * ({@code -d}) starts without defaults, servers or server limits. Without a
 * live daemon every command fails (exit 1), as the real tool does when it cannot reach its daemon. Public (in the
 * node module's test jar) for the agents' tests.
 *
 * <p>Two modes, each switched on by a marker file in the GPU's pipe directory (read at every call, so a test
 * switches them between calls with the static helpers):
 * <ul>
 *   <li>{@value #SILENT_FILE} ({@link #makeSilent}, {@link #clearSilent}): the daemon is hung. It stays
 *       alive, so a second {@code -d} still fails, but every command to it ({@code get_server_list},
 *       {@code quit}) fails with exit 1, as an unresponsive daemon's do; {@code quit} leaves it running.</li>
 *   <li>{@value #SLOW_FILE} ({@link #makeSlow}, {@link #clearSlow}): the file holds a number of seconds (as
 *       {@code sleep(1)} takes it, fractions allowed); every call, {@code -d} included, sleeps that long
 *       after it is recorded and before it answers, as a slow daemon's commands do. Past
 *       {@link ProcessMpsControl}'s timeout the call is killed and counts as failed.</li>
 * </ul>
 */
public final class FakeMpsControlScript {
    static final String PID_FILE = "nvidia-cuda-mps-control.pid";
    /** The marker file (in the GPU's pipe directory) that makes its daemon silent (hung). */
    public static final String SILENT_FILE = "silent";
    /** The marker file (in the GPU's pipe directory) that makes every call slow; its content: seconds. */
    public static final String SLOW_FILE = "slow";
    /** The file (in the GPU's pipe directory) of the daemon's defaults, one {@code set_default_*} command a line. */
    public static final String DEFAULTS_FILE = "defaults";
    /** The file (in the GPU's pipe directory) of the "running servers" {@code get_server_list} prints, a pid a line. */
    public static final String SERVERS_FILE = "servers";
    /** The file (in the GPU's pipe directory) of the servers' limits, one per-server {@code set_*} command a line. */
    public static final String SERVER_LIMITS_FILE = "server-limits";
    private static final String DAEMON_SECONDS = "100000";

    /** The script. */
    public final Path binary;
    /** Its record file. */
    public final Path record;

    private FakeMpsControlScript(Path binary, Path record) {
        this.binary = binary;
        this.record = record;
    }

    public static FakeMpsControlScript write(Path dir) throws IOException {
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
                "slow_down() {",
                "  [ -f \"$pipe/" + SLOW_FILE + "\" ] && sleep \"$(cat \"$pipe/" + SLOW_FILE + "\")\"",
                "}",
                "if [ \"$1\" = \"-d\" ]; then",
                "  echo \"start visible=${CUDA_VISIBLE_DEVICES:-} pipe=${CUDA_MPS_PIPE_DIRECTORY:-} log=${CUDA_MPS_LOG_DIRECTORY:-}\" >> \"$RECORD\"",
                "  slow_down",
                "  if alive; then echo 'An instance of this daemon is already running'; exit 1; fi",
                "  rm -f \"$pipe/" + DEFAULTS_FILE + "\" \"$pipe/" + SERVERS_FILE + "\" \"$pipe/" + SERVER_LIMITS_FILE + "\"",
                "  sleep " + DAEMON_SECONDS + " </dev/null >/dev/null 2>&1 &",
                "  echo $! > \"$pidfile\"",
                "  exit 0",
                "fi",
                "read -r cmd",
                "echo \"command $cmd visible=${CUDA_VISIBLE_DEVICES:-} pipe=${CUDA_MPS_PIPE_DIRECTORY:-} log=${CUDA_MPS_LOG_DIRECTORY:-}\" >> \"$RECORD\"",
                "slow_down",
                "if alive; then",
                "  if [ -f \"$pipe/" + SILENT_FILE + "\" ]; then echo 'the MPS control daemon does not answer' >&2; exit 1; fi",
                "  set -- $cmd",
                "  case \"$1\" in",
                "    quit) kill \"$(cat \"$pidfile\")\"; rm -f \"$pidfile\" \"$pipe/" + DEFAULTS_FILE + "\" \"$pipe/" + SERVERS_FILE + "\" \"$pipe/" + SERVER_LIMITS_FILE + "\" ;;",
                "    get_server_list) [ -f \"$pipe/" + SERVERS_FILE + "\" ] && cat \"$pipe/" + SERVERS_FILE + "\"; exit 0 ;;",
                "    set_default_device_pinned_mem_limit|set_default_active_thread_percentage)",
                "      f=\"$pipe/" + DEFAULTS_FILE + "\"; touch \"$f\"; grep -v \"^$1 \" \"$f\" > \"$f.new\"; echo \"$cmd\" >> \"$f.new\"; mv \"$f.new\" \"$f\" ;;",
                "    set_device_pinned_mem_limit|set_active_thread_percentage)",
                "      if ! grep -qx \"$2\" \"$pipe/" + SERVERS_FILE + "\" 2>/dev/null; then echo \"no MPS server with pid $2\" >&2; exit 1; fi",
                "      f=\"$pipe/" + SERVER_LIMITS_FILE + "\"; touch \"$f\"; grep -v \"^$1 $2 \" \"$f\" > \"$f.new\"; echo \"$cmd\" >> \"$f.new\"; mv \"$f.new\" \"$f\" ;;",
                "    *) echo \"unknown command $1\" >&2; exit 1 ;;",
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
    public List<String> calls() throws IOException {
        return Files.readAllLines(record).stream().filter(l -> !l.isBlank()).toList();
    }

    /** The pid of the GPU's fake daemon, if its pid file exists. */
    public static Optional<Long> daemonPid(MpsLayout layout, String gpu) throws IOException {
        Path f = layout.pipeDir(gpu).resolve(PID_FILE);
        if (!Files.exists(f)) {
            return Optional.empty();
        }
        return Optional.of(Long.parseLong(Files.readString(f).trim()));
    }

    /**
     * The pids of every running fake daemon of the GPU, found in {@code /proc} (a {@code sleep} of the daemon's
     * length whose environment names the GPU's pipe directory), whatever its pid file says: a check that the
     * GPU never has two daemons. Processes that cannot be read (another user's, or gone meanwhile) are skipped.
     */
    public static List<Long> liveDaemons(MpsLayout layout, String gpu) throws IOException {
        String env = "CUDA_MPS_PIPE_DIRECTORY=" + layout.pipeDir(gpu);
        return daemons(env::equals);
    }

    /** The running fake daemons (by their command line) one of whose environment entries matches; sorted pids. */
    private static List<Long> daemons(java.util.function.Predicate<String> envEntry) throws IOException {
        byte[] cmdline = ("sleep\0" + DAEMON_SECONDS + "\0").getBytes(StandardCharsets.US_ASCII);
        List<Long> pids = new ArrayList<>();
        try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
            for (Path proc : procs.toList()) {
                String name = proc.getFileName().toString();
                if (!name.chars().allMatch(Character::isDigit)) {
                    continue;
                }
                try {
                    if (Arrays.equals(cmdline, Files.readAllBytes(proc.resolve("cmdline")))
                            && Arrays.stream(Files.readString(proc.resolve("environ"), StandardCharsets.ISO_8859_1).split("\0")).anyMatch(envEntry)
                            && running(Long.parseLong(name))) {
                        pids.add(Long.parseLong(name));
                    }
                } catch (IOException e) {
                    // not ours to read, or it went away
                }
            }
        }
        Collections.sort(pids);
        return pids;
    }

    /** Makes the fake daemon of the GPU report a running MPS server with this pid ({@code get_server_list}). */
    public static void addServer(MpsLayout layout, String gpu, long pid) throws IOException {
        Files.createDirectories(layout.pipeDir(gpu));
        Files.writeString(layout.pipeDir(gpu).resolve(SERVERS_FILE), pid + "\n", StandardCharsets.US_ASCII,
                java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
    }

    /** The fake daemon's defaults now: the last {@code set_default_*} command of each kind, in the order last set. */
    public static List<String> defaults(MpsLayout layout, String gpu) throws IOException {
        return lines(layout.pipeDir(gpu).resolve(DEFAULTS_FILE));
    }

    /** The fake daemon's per-server limits now: the last per-server {@code set_*} command of each kind and server. */
    public static List<String> serverLimits(MpsLayout layout, String gpu) throws IOException {
        return lines(layout.pipeDir(gpu).resolve(SERVER_LIMITS_FILE));
    }

    private static List<String> lines(Path f) throws IOException {
        return Files.exists(f) ? Files.readAllLines(f).stream().filter(l -> !l.isBlank()).toList() : List.of();
    }

    /**
     * Kills (SIGKILL) every fake daemon of any GPU under the layout's root, found in {@code /proc} as
     * {@link #liveDaemons} finds them: the clean-up of a test whose agent left its daemons running (as agents now
     * do when they stop).
     */
    public static void killAll(MpsLayout layout) throws IOException, InterruptedException {
        String prefix = "CUDA_MPS_PIPE_DIRECTORY=" + layout.root() + "/";
        for (long pid : daemons(e -> e.startsWith(prefix))) {
            crash(pid);
        }
    }

    /** Makes the GPU's fake daemon silent: alive, but every command to it fails (exit 1). */
    public static void makeSilent(MpsLayout layout, String gpu) throws IOException {
        Files.createDirectories(layout.pipeDir(gpu));
        Files.writeString(layout.pipeDir(gpu).resolve(SILENT_FILE), "");
    }

    /** Makes the GPU's fake daemon answer again (removes the {@value #SILENT_FILE} marker). */
    public static void clearSilent(MpsLayout layout, String gpu) throws IOException {
        Files.deleteIfExists(layout.pipeDir(gpu).resolve(SILENT_FILE));
    }

    /** Makes every call for the GPU sleep this long (millisecond precision) before it answers. */
    public static void makeSlow(MpsLayout layout, String gpu, Duration d) throws IOException {
        if (d.isNegative()) {
            throw new IllegalArgumentException("slow = " + d + ": must not be negative");
        }
        long ms = d.toMillis();
        Files.createDirectories(layout.pipeDir(gpu));
        Files.writeString(layout.pipeDir(gpu).resolve(SLOW_FILE), String.format(Locale.ROOT, "%d.%03d%n", ms / 1000, ms % 1000));
    }

    /** Makes the GPU's calls answer at once again (removes the {@value #SLOW_FILE} marker). */
    public static void clearSlow(MpsLayout layout, String gpu) throws IOException {
        Files.deleteIfExists(layout.pipeDir(gpu).resolve(SLOW_FILE));
    }

    /** Whether a process runs (exists and is not a zombie), by the same rule as the fake. */
    public static boolean running(long pid) {
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
    public static void crash(long pid) throws InterruptedException {
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
