package io.qgpu.samples.gpuprobe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code run-enforcement-check.sh} end to end on fakes: a fake {@code nvidia-smi}, a fake
 * {@code nvidia-cuda-mps-control} that records its calls, the fake CUDA driver that records each probe's
 * environment, and an empty {@code libvgpu.so}. Shows the script's plumbing only (which probe gets which
 * limits, the MPS daemon started with its own directories and quit, the summary table); the fakes enforce
 * nothing, so the figures say nothing about MPS or HAMi-core.
 */
class EnforcementCheckScriptTest {
    private static final Path SCRIPT = Path.of(System.getProperty("gpuprobe.script", "run-enforcement-check.sh"));
    private static final Path FAKES = Path.of(System.getProperty("gpuprobe.fakes.dir", "target/fakes"));
    private static final String UUID = "GPU-0fa4e000-1111-2222-3333-444455556666";

    private static void executable(Path p, String text) throws IOException {
        Files.writeString(p, text, StandardCharsets.UTF_8);
        Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    private record Run(int exit, String stdout, String stderr) {
    }

    private Run script(Path tmp, Map<String, String> extraEnv, String... args) throws Exception {
        Path bin = Files.createDirectories(tmp.resolve("bin"));
        executable(bin.resolve("nvidia-smi"), String.join("\n", "#!/bin/sh",
                "[ \"$1 $2\" = '-i 0' ] || { echo \"no GPU $2\" >&2; exit 6; }",
                "echo '" + UUID + ", Fake GPU, 550.54.15, 1024'", ""));
        Path mpsRecord = tmp.resolve("mps-calls.txt");
        executable(bin.resolve("nvidia-cuda-mps-control"), String.join("\n", "#!/bin/sh",
                "pipe=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/nvidia-mps}",
                "if [ \"$1\" = -d ]; then",
                "  echo \"start visible=$CUDA_VISIBLE_DEVICES pipe=$CUDA_MPS_PIPE_DIRECTORY log=$CUDA_MPS_LOG_DIRECTORY\" >> '" + mpsRecord + "'",
                "  touch \"$pipe/fake-daemon\"; exit 0",
                "fi",
                "read -r cmd",
                "echo \"$cmd pipe=${CUDA_MPS_PIPE_DIRECTORY:-}\" >> '" + mpsRecord + "'",
                "[ -f \"$pipe/fake-daemon\" ] || exit 1",
                "[ \"$cmd\" = quit ] && rm -f \"$pipe/fake-daemon\"",
                "exit 0", ""));
        List<String> command = new java.util.ArrayList<>(List.of("bash", SCRIPT.toString(), "--out", tmp.resolve("out").toString(),
                "--seconds", "0.2", "--containers", "off"));
        command.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(command).redirectOutput(tmp.resolve("stdout.txt").toFile()).redirectError(tmp.resolve("stderr.txt").toFile());
        Map<String, String> env = pb.environment();
        env.put("PATH", bin + ":" + env.getOrDefault("PATH", "/usr/bin:/bin"));
        env.put("JAVA", ProcessHandle.current().info().command().orElse("java"));
        env.put("PROBE_CLASSPATH", System.getProperty("java.class.path"));
        env.put("PROBE_ARGS", "--library " + FAKES.resolve("libcuda.so.1") + " --iterations 1000");
        env.put("PROBE_JAVA_OPTS", "-Xshare:auto -XX:TieredStopAtLevel=1 --enable-native-access=ALL-UNNAMED");
        env.put("START_LEAD_S", "0");
        env.put("FAKE_CUDA_RECORD", tmp.resolve("cuda-env.txt").toString());
        env.remove("HAMI_CORE_LIBRARY");
        env.putAll(extraEnv);
        Process p = pb.start();
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the script finished");
        return new Run(p.exitValue(), Files.readString(tmp.resolve("stdout.txt")), Files.readString(tmp.resolve("stderr.txt")));
    }

    @Test
    void runsEveryCaseAndPrintsTheTable(@TempDir Path tmp) throws Exception {
        Path vgpu = FAKES.resolve("libvgpu.so");
        Run r = script(tmp, Map.of(), "--hami-core-library", vgpu.toString());
        assertEquals(0, r.exit(), r.stdout() + r.stderr());

        assertTrue(r.stdout().contains("GPU 0: Fake GPU (" + UUID + "), 1024 MiB; driver 550.54.15"), r.stdout());
        assertTrue(Pattern.compile("(?m)^solo +solo +- +1024 +- +100\\.0 +1\\.0000e\\+12$").matcher(r.stdout()).find(), r.stdout());
        for (String row : List.of("solo +solo +- +1024 +- +",
                "none +none-30 +8192 +1024 +30 +", "none +none-60 +16384 +1024 +60 +",
                "mps +mps-30 +8192 +1024 +30 +", "mps +mps-60 +16384 +1024 +60 +",
                "hami-core +hami-30 +8192 +1024 +30 +", "hami-core +hami-60 +16384 +1024 +60 +")) {
            assertTrue(Pattern.compile("(?m)^" + row + "[0-9.]+ +[0-9.e+]+$").matcher(r.stdout()).find(), row + " in\n" + r.stdout());
        }
        assertEquals(r.stdout().substring(r.stdout().indexOf("machine:"), r.stdout().indexOf("output:")).strip(),
                Files.readString(tmp.resolve("out/summary.txt")).strip(), "summary.txt holds what was printed");

        List<String> mps = Files.readAllLines(tmp.resolve("mps-calls.txt"));
        String start = mps.stream().filter(l -> l.startsWith("start ")).findFirst().orElseThrow();
        assertTrue(start.matches("start visible=" + UUID + " pipe=/tmp/qgpu-mps\\.\\w+/pipe log=/tmp/qgpu-mps\\.\\w+/log"), start);
        String pipe = start.replaceAll(".* pipe=(\\S+) .*", "$1");
        assertTrue(mps.contains("get_server_list pipe=" + pipe), mps.toString());
        assertEquals("quit pipe=" + pipe, mps.get(mps.size() - 1), "the daemon is quit at the end");

        List<String> envs = Files.readAllLines(tmp.resolve("cuda-env.txt"));
        assertEquals(7, envs.size(), String.join("\n", envs));
        String none = "CUDA_VISIBLE_DEVICES=" + UUID + " CUDA_MPS_PIPE_DIRECTORY= CUDA_MPS_ACTIVE_THREAD_PERCENTAGE= "
                + "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT= CUDA_DEVICE_SM_LIMIT= CUDA_DEVICE_MEMORY_LIMIT_0= CUDA_DEVICE_MEMORY_SHARED_CACHE= LD_PRELOAD=";
        assertEquals(3, envs.stream().filter(none::equals).count(), "solo and the none pair run without any back end");
        assertTrue(envs.contains("CUDA_VISIBLE_DEVICES=" + UUID + " CUDA_MPS_PIPE_DIRECTORY=" + pipe + " CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30 "
                + "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=8192M CUDA_DEVICE_SM_LIMIT= CUDA_DEVICE_MEMORY_LIMIT_0= CUDA_DEVICE_MEMORY_SHARED_CACHE= LD_PRELOAD="),
                String.join("\n", envs));
        assertTrue(envs.contains("CUDA_VISIBLE_DEVICES=" + UUID + " CUDA_MPS_PIPE_DIRECTORY=" + pipe + " CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=60 "
                + "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=16384M CUDA_DEVICE_SM_LIMIT= CUDA_DEVICE_MEMORY_LIMIT_0= CUDA_DEVICE_MEMORY_SHARED_CACHE= LD_PRELOAD="),
                String.join("\n", envs));
        Path cache = tmp.resolve("out/hami-core");
        assertTrue(envs.contains("CUDA_VISIBLE_DEVICES=" + UUID + " CUDA_MPS_PIPE_DIRECTORY= CUDA_MPS_ACTIVE_THREAD_PERCENTAGE= "
                + "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT= CUDA_DEVICE_SM_LIMIT=30 CUDA_DEVICE_MEMORY_LIMIT_0=8192m "
                + "CUDA_DEVICE_MEMORY_SHARED_CACHE=" + cache.resolve("hami-30.cache") + " LD_PRELOAD=" + vgpu), String.join("\n", envs));
        assertTrue(envs.contains("CUDA_VISIBLE_DEVICES=" + UUID + " CUDA_MPS_PIPE_DIRECTORY= CUDA_MPS_ACTIVE_THREAD_PERCENTAGE= "
                + "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT= CUDA_DEVICE_SM_LIMIT=60 CUDA_DEVICE_MEMORY_LIMIT_0=16384m "
                + "CUDA_DEVICE_MEMORY_SHARED_CACHE=" + cache.resolve("hami-60.cache") + " LD_PRELOAD=" + vgpu), String.join("\n", envs));
    }

    @Test
    void withoutHamiCoreThatCaseIsSkippedWithAMessage(@TempDir Path tmp) throws Exception {
        Run r = script(tmp, Map.of("FAKE_CUDA_MEMORY_MIB", "2048"));
        assertEquals(0, r.exit(), r.stdout() + r.stderr());
        assertTrue(r.stderr().contains("hami-core: skipped: no libvgpu.so given (--hami-core-library PATH or HAMI_CORE_LIBRARY)"), r.stderr());
        assertTrue(Files.readString(tmp.resolve("out/summary.txt")).contains("hami-core: skipped: no libvgpu.so given"),
                "the skip is in the summary");
        assertTrue(!r.stdout().contains("hami-30"), r.stdout());
        assertTrue(Pattern.compile("(?m)^mps +mps-30 +8192 +2048 ").matcher(r.stdout()).find(), r.stdout());
    }

    @Test
    void aBadFlagNamesTheFlagAndTheValueExit2(@TempDir Path tmp) throws Exception {
        Run r = script(tmp, Map.of(), "--device", "first");
        assertEquals(2, r.exit());
        assertEquals("run-enforcement-check: --device = \"first\": must be a GPU index (0, 1, ...)", r.stderr().strip());
        Run c = script(tmp.resolve("c"), Map.of(), "--containers", "kubernetes");
        assertEquals(2, c.exit());
        assertEquals("run-enforcement-check: --containers = \"kubernetes\": must be one of auto, docker, podman, off", c.stderr().strip());
    }

    /** A fake {@code docker}: {@code info} answers (with the nvidia runtime when asked to), anything else is recorded and fails. */
    private static Path fakeDocker(Path tmp, boolean nvidia) throws IOException {
        Path bin = Files.createDirectories(tmp.resolve("bin"));
        Path calls = tmp.resolve("docker-calls.txt");
        executable(bin.resolve("docker"), String.join("\n", "#!/bin/sh",
                "echo \"docker $*\" >> '" + calls + "'",
                "if [ \"$1\" = info ]; then",
                nvidia ? "  case \"$*\" in *Runtimes*) echo '{\"nvidia\":{\"path\":\"nvidia-container-runtime\"},\"runc\":{\"path\":\"runc\"}}';; esac"
                        : "  case \"$*\" in *Runtimes*) echo '{\"runc\":{\"path\":\"runc\"}}';; esac",
                "  exit 0",
                "fi",
                "exit 1", ""));
        return calls;
    }

    @Test
    void dryRunPrintsTheContainerChecksAndStartsNothing(@TempDir Path tmp) throws Exception {
        Path calls = fakeDocker(tmp, true);
        Path vgpu = FAKES.resolve("libvgpu.so");
        Run r = script(tmp, Map.of(), "--dry-run", "--containers", "docker", "--hami-core-library", vgpu.toString(), "--container-image", "probe:1");
        assertEquals(0, r.exit(), r.stdout() + r.stderr());
        assertTrue(r.stdout().contains("dry run: nothing is started; the commands follow"), r.stdout());
        assertTrue(r.stdout().strip().endsWith("dry run: done; nothing was started"), r.stdout());
        assertEquals(List.of("docker info", "docker info --format {{json .Runtimes}}"), Files.readAllLines(calls), "only asked, never ran");
        assertTrue(!Files.exists(tmp.resolve("cuda-env.txt")), "no probe ran");
        assertTrue(!Files.exists(tmp.resolve("mps-calls.txt")), "no MPS daemon was started");
        String gpu = "--runtime nvidia -e NVIDIA_VISIBLE_DEVICES=" + UUID + " -e NVIDIA_DRIVER_CAPABILITIES=compute\\,utility";
        String mps = "--ipc host -v /tmp/qgpu-cmps.XXXXXX/pipe:/tmp/nvidia-mps -e CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps";
        Path out = tmp.resolve("out");
        String hami = "-v " + vgpu + ":/usr/local/vgpu/libvgpu.so:ro -v " + out.resolve("container-hami-core/ld.so.preload") + ":/etc/ld.so.preload:ro";
        String probe = "probe:1 /qgpu/runtime/bin/java [^\\n]*-cp /qgpu/gpu-probe.jar io\\.qgpu\\.samples\\.gpuprobe\\.Main";
        for (String line : List.of(
                "(?m)^\\+ docker run --rm --name qgpu-probe-cmps-30-\\d+ " + Pattern.quote(gpu) + " -v \\S+:/qgpu:ro " + Pattern.quote(mps)
                        + " -e CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=8192M -e CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30 " + probe + " --label cmps-30 ",
                "(?m)^\\+ docker run .* --user 65534:65534 " + Pattern.quote(mps) + " .* --label cmps-nonroot ",
                "(?m)^\\+ docker run .* --user 1000:1000 .* --label cmps-uid1000 ",
                "(?m)^\\+ docker run .* --user 2000:2000 .* --label cmps-uid2000 ",
                "(?m)^\\+ docker run .* probe:1 env -u CUDA_MPS_PINNED_DEVICE_MEM_LIMIT -u CUDA_MPS_ACTIVE_THREAD_PERCENTAGE /qgpu/.* --label cmps-unset ",
                "(?m)^\\+ docker run .* probe:1 env -i /qgpu/.* --label cmps-envi ",
                "(?m)^\\+ docker run .* probe:1 env CUDA_MPS_PIPE_DIRECTORY=/tmp/qgpu-no-mps-here /qgpu/.* --label cmps-skip-mps ",
                "(?m)^\\+ docker run .* --label cmps-restart ",
                "(?m)^\\+ docker run .* --label cmps-after ",
                "(?m)^\\+ docker run --rm --name qgpu-probe-chami-30-\\d+ " + Pattern.quote(gpu) + " -v \\S+:/qgpu:ro " + Pattern.quote(hami)
                        + " -v " + Pattern.quote(out.resolve("container-hami-core/cache/chami-30") + ":/usr/local/vgpu/cache")
                        + " -v /tmp/vgpulock:/tmp/vgpulock -e CUDA_DEVICE_MEMORY_LIMIT_0=8192m -e CUDA_DEVICE_SM_LIMIT=30 "
                        + "-e CUDA_DEVICE_MEMORY_SHARED_CACHE=/usr/local/vgpu/cache/vgpu.cache " + probe + " --label chami-30 ",
                "(?m)^\\+ docker run .* --user 65534:65534 " + Pattern.quote(hami) + " .* --label chami-nonroot ",
                "(?m)^\\+ docker run .* probe:1 env -u CUDA_DEVICE_MEMORY_LIMIT_0 -u CUDA_DEVICE_SM_LIMIT -u CUDA_DEVICE_MEMORY_SHARED_CACHE /qgpu/.* --label chami-unset ",
                "(?m)^\\+ docker run .* probe:1 env -i /qgpu/.* --label chami-envi ",
                "(?m)^\\+ docker run .* probe:1 env -u LD_PRELOAD /qgpu/.* --label chami-no-ld-preload ",
                "(?m)^\\+ docker exec qgpu-probe-chami-restart-\\d+ /qgpu/runtime/bin/java .* --label chami-exec ")) {
            assertTrue(Pattern.compile(line).matcher(r.stdout()).find(), line + " in\n" + r.stdout());
        }
        assertTrue(!r.stdout().contains("LD_PRELOAD=" + vgpu + " -") && !Pattern.compile("docker run [^\\n]*-e LD_PRELOAD").matcher(r.stdout()).find(),
                "the containers get the preload file, not LD_PRELOAD");
    }

    @Test
    void withoutNvidiaSupportTheContainerChecksAreSkippedWithALine(@TempDir Path tmp) throws Exception {
        fakeDocker(tmp, false);
        Run r = script(tmp, Map.of("PATH", tmp.resolve("bin") + ":/usr/bin:/bin"), "--containers", "docker");
        assertEquals(0, r.exit(), r.stdout() + r.stderr());
        assertTrue(r.stdout().contains("containers: skipped: no container runtime with NVIDIA support: docker has no NVIDIA support "
                + "(no nvidia runtime in 'docker info', no CDI device nvidia.com/gpu=" + UUID + " in 'nvidia-ctk cdi list', no nvidia-container-cli)"),
                r.stdout());
        assertTrue(Files.readString(tmp.resolve("out/summary.txt")).contains("containers: skipped: no container runtime"), "the skip is in the summary");
        assertTrue(!r.stdout().contains("containers:\n"), "no container table");
    }

    @Test
    void theScriptsPassBashNAndShellcheck() throws Exception {
        for (Path s : List.of(SCRIPT, SCRIPT.resolveSibling("make-bundle.sh"))) {
            Process n = new ProcessBuilder("bash", "-n", s.toString()).redirectErrorStream(true).start();
            assertTrue(n.waitFor(30, TimeUnit.SECONDS));
            assertEquals(0, n.exitValue(), s + ": " + new String(n.getInputStream().readAllBytes()));
        }
        boolean shellcheck = java.util.stream.Stream.of(System.getenv().getOrDefault("PATH", "").split(":"))
                .anyMatch(d -> !d.isEmpty() && Files.isExecutable(Path.of(d, "shellcheck")));
        org.junit.jupiter.api.Assumptions.assumeTrue(shellcheck, "shellcheck is not installed");
        Process sc = new ProcessBuilder("shellcheck", SCRIPT.toString(), SCRIPT.resolveSibling("make-bundle.sh").toString())
                .redirectErrorStream(true).start();
        assertTrue(sc.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, sc.exitValue(), new String(sc.getInputStream().readAllBytes()));
    }
}
