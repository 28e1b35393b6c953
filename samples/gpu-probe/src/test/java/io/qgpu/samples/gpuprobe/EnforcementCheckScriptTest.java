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
                "--seconds", "0.2"));
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
    }
}
