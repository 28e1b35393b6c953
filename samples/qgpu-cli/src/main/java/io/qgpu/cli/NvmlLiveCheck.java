package io.qgpu.cli;

import io.qgpu.nvml.Nvml;
import io.qgpu.nvml.NvmlDevice;
import io.qgpu.nvml.NvmlException;
import io.qgpu.nvml.NvmlProcess;
import io.qgpu.nvml.health.NvmlHealthMonitor;
import io.qgpu.nvml.usage.GpuUsage;
import io.qgpu.nvml.usage.NvmlUsageSampler;
import io.qgpu.nvml.usage.ProcessUsage;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Checks qgpu's NVML binding against a live workload on a real GPU: while a known process (for example a
 * PyTorch loop started by {@code samples/nvml-check/run-live-check.sh}) holds memory and runs kernels, it
 * opens NVML, starts the Xid health monitor on every GPU, samples usage once a second through
 * {@link NvmlUsageSampler} and the raw process list, then closes the monitor and the session twice each.
 *
 * <pre>
 * java -cp ... io.qgpu.cli.NvmlLiveCheck PID MIN_MEMORY_MIB SECONDS
 * </pre>
 *
 * <p>It passes (exit code 0) when: the process is listed on some GPU with at least {@code MIN_MEMORY_MIB}
 * of memory, in the raw list and in the sampler's report; at least one sample gives it a non-zero SM
 * share and the GPU a non-zero utilization; every GPU is watched for Xid events (or named as not
 * watchable) and the monitor reports no unhealthy GPU; the monitor has stopped after {@code close()}, and a
 * second {@code close()} of the monitor and of the session is harmless. Exit code 1 names every check that
 * failed; 2 means the check could not run (bad arguments, no NVML).
 */
public final class NvmlLiveCheck {

    private NvmlLiveCheck() {
    }

    public static void main(String[] args) throws InterruptedException {
        if (args.length != 3) {
            System.err.println("usage: NvmlLiveCheck PID MIN_MEMORY_MIB SECONDS");
            System.exit(2);
        }
        long pid;
        long minMiB;
        int seconds;
        try {
            pid = Long.parseLong(args[0]);
            minMiB = Long.parseLong(args[1]);
            seconds = Integer.parseInt(args[2]);
        } catch (NumberFormatException e) {
            System.err.println("NvmlLiveCheck: not a number: " + e.getMessage());
            System.exit(2);
            return;
        }
        Nvml nvml;
        try {
            nvml = Nvml.open();
        } catch (RuntimeException e) {
            System.err.println("NvmlLiveCheck: NVML could not be opened: " + e);
            System.exit(2);
            return;
        }
        System.exit(run(nvml, pid, minMiB, seconds, 1000, System.out));
    }

    /**
     * Runs the checks: {@code samples} rounds, {@code intervalMillis} apart (tests pass 0), and returns the exit code.
     */
    static int run(Nvml nvml, long pid, long minMiB, int samples, long intervalMillis, PrintStream out)
            throws InterruptedException {
        List<String> failures = new ArrayList<>();
        out.printf("driver %s, NVML %s, %d GPU(s), library %s%n", nvml.driverVersion(), nvml.nvmlVersion(),
                nvml.deviceCount(), nvml.library());
        List<NvmlDevice> devices = nvml.devices();
        for (NvmlDevice d : devices) {
            out.printf("gpu %d %s %s cc %s memory total %d MiB used %d MiB%n", d.index(), d.uuid(), d.name(),
                    d.computeCapability(), d.memory().total() >> 20, d.memory().used() >> 20);
        }
        NvmlHealthMonitor monitor = NvmlHealthMonitor.builder(nvml).waitTimeout(Duration.ofMillis(200)).start();
        out.printf("health monitor: watched %s, unwatched %s%n", monitor.watchedGpus(), monitor.unwatchedGpus());
        if (monitor.watchedGpus().size() + monitor.unwatchedGpus().size() != devices.size()) {
            failures.add("health monitor accounts for " + (monitor.watchedGpus().size() + monitor.unwatchedGpus().size())
                    + " GPUs, NVML lists " + devices.size());
        }
        NvmlUsageSampler sampler = NvmlUsageSampler.builder(nvml).build();
        boolean listedRaw = false;
        boolean listedSampler = false;
        boolean smSeen = false;
        boolean gpuBusySeen = false;
        for (int s = 0; s < samples; s++) {
            Thread.sleep(intervalMillis);
            for (NvmlDevice d : devices) {
                for (NvmlProcess p : d.runningComputeProcesses()) {
                    if (p.pid() == pid && p.usedMemoryKnown() && p.usedMemoryBytes() >> 20 >= minMiB) {
                        listedRaw = true;
                    }
                }
                GpuUsage u;
                try {
                    u = sampler.sample(d.uuid());
                } catch (NvmlException e) {
                    failures.add("sample of " + d.uuid() + " failed: " + e);
                    continue;
                }
                StringBuilder line = new StringBuilder();
                for (ProcessUsage p : u.processes()) {
                    line.append(String.format(" pid %d mem %d MiB sm %d%%%s", p.pid(), p.usedMemoryBytes() >> 20,
                            p.smUtilPercent(), p.sampled() ? "" : " (no sample)"));
                    if (p.pid() == pid) {
                        listedSampler |= p.usedMemoryBytes() >> 20 >= minMiB;
                        smSeen |= p.smUtilPercent() > 0;
                    }
                }
                gpuBusySeen |= u.gpuUtilPercent() > 0;
                out.printf("sample %d gpu %d util %d%% mem-util %d%% smSampled %s listed %s:%s%n", s + 1, d.index(),
                        u.gpuUtilPercent(), u.memoryUtilPercent(), u.smSampled(), u.processesListed(), line);
            }
        }
        check(failures, listedRaw, "pid " + pid + " listed by nvmlDeviceGetComputeRunningProcesses with >= " + minMiB + " MiB");
        check(failures, listedSampler, "pid " + pid + " in the sampler's report with >= " + minMiB + " MiB");
        check(failures, smSeen, "pid " + pid + " given a non-zero SM share in some sample");
        check(failures, gpuBusySeen, "a non-zero GPU utilization in some sample");
        check(failures, nvml.unhealthyGpus().isEmpty(), "no GPU reported unhealthy (got " + nvml.unhealthyGpus() + ")");
        out.printf("health monitor saw %d event(s)%n", monitor.eventsSeen());
        monitor.close();
        check(failures, !monitor.isRunning(), "health monitor stopped after close()");
        monitor.close();
        nvml.close();
        nvml.close();
        check(failures, nvml.isClosed(), "session closed after close() twice");
        for (String f : failures) {
            out.println("FAIL " + f);
        }
        out.println(failures.isEmpty() ? "live check: all passed" : "live check: " + failures.size() + " failed");
        return failures.isEmpty() ? 0 : 1;
    }

    private static void check(List<String> failures, boolean ok, String what) {
        if (!ok) {
            failures.add(what);
        }
    }
}
