package io.qgpu.kubernetes.node.mps;

import io.qgpu.api.GranularityRules;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Placement;
import io.qgpu.api.Slice;
import java.util.Collection;
import java.util.List;
import java.util.Objects;

/**
 * The limits a GPU's MPS control daemon holds its clients to on the daemon side, where a client that drops its
 * {@code CUDA_MPS_*} variables cannot shed them: the pinned device memory and the active thread percentage.
 * A client's own variables can only lower these, never raise them, so the daemon's limits are a ceiling over
 * every client of the GPU.
 *
 * <p>Two sets of control commands carry them ({@link #defaultCommands()}, {@link #serverCommands(long)}): the
 * daemon's defaults, which the next MPS server it spawns starts with (they are lost when the daemon quits), and
 * the same limits on a server already running, which the clients it creates from then on get. The device is
 * ordinal {@code 0}: each daemon runs with {@code CUDA_VISIBLE_DEVICES} set to its one GPU.
 *
 * <p>{@link #forGpu} chooses them from the slices on the GPU (see {@code docs/enforcement.md}, "Limits a client
 * cannot shed"): with no slice, the smallest slice the granularity rules allow ({@link #smallest}); with one,
 * that slice's limits; with several, the largest memory and the largest compute limit among them (a lower
 * ceiling would hold a larger tenant below its own reservation, since a client's variables cannot raise it).
 *
 * <pre>{@code
 * MpsLimits l = MpsLimits.forGpu("GPU-a", ledger.placements(), MpsLimits.smallest(GranularityRules.ofDefaults()));
 * l.defaultCommands();      // [set_default_device_pinned_mem_limit 0 8192M, set_default_active_thread_percentage 70]
 * l.serverCommands(4242);   // [set_device_pinned_mem_limit 4242 0 8192M, set_active_thread_percentage 4242 70]
 * }</pre>
 *
 * @param memoryMib              pinned device memory each client may allocate, in whole MiB (at least 1)
 * @param activeThreadPercentage the share of the GPU's threads each client may use, 1..100
 *
 * <p>Thread safety: immutable.
 */
public record MpsLimits(long memoryMib, int activeThreadPercentage) {
    private static final long MIB = 1L << 20;

    public MpsLimits {
        if (memoryMib < 1) {
            throw new InvalidValueException("mpsLimits.memoryMib", memoryMib, "must be at least 1: MPS takes limits in whole MiB");
        }
        if (activeThreadPercentage < 1 || activeThreadPercentage > 100) {
            throw new InvalidValueException("mpsLimits.activeThreadPercentage", activeThreadPercentage, "must be 1..100");
        }
    }

    /**
     * The smallest slice these rules allow: the larger of the minimum and the unit of memory, rounded down to whole
     * MiB (at least 1), and one compute unit.
     */
    public static MpsLimits smallest(GranularityRules rules) {
        Objects.requireNonNull(rules, "rules");
        long bytes = Math.max(rules.minMemoryBytes(), rules.memoryUnitBytes());
        return new MpsLimits(Math.max(1, bytes / MIB), rules.computeUnit());
    }

    /**
     * The daemon-side limits of one GPU, from the slices the placements hold on it: {@code floor} when none, the
     * one slice's limits, or the largest memory and compute limit of several. Exclusive and host-only claims are
     * not counted (an exclusive claim bypasses MPS), nor are slices below 1 MiB (MPS refuses those claims).
     */
    public static MpsLimits forGpu(String gpuUuid, Collection<Placement> placements, MpsLimits floor) {
        Objects.requireNonNull(gpuUuid, "gpuUuid");
        Objects.requireNonNull(floor, "floor");
        long memory = 0;
        int threads = 0;
        for (Placement p : placements) {
            if (p.claim().exclusive() || p.claim().hostOnly()) {
                continue;
            }
            for (Slice s : p.slices()) {
                if (s.gpuUuid().equals(gpuUuid) && s.memoryBytes() >= MIB) {
                    memory = Math.max(memory, s.memoryBytes() / MIB);
                    threads = Math.max(threads, Math.max(1, Math.min(100, s.computeLimit())));
                }
            }
        }
        return memory == 0 ? floor : new MpsLimits(memory, threads);
    }

    /** The daemon's defaults, which the next server it spawns starts with. */
    public List<String> defaultCommands() {
        return List.of("set_default_device_pinned_mem_limit 0 " + memoryMib + "M",
                "set_default_active_thread_percentage " + activeThreadPercentage);
    }

    /** The limits on a running server (by its pid, as {@code get_server_list} gives it) for the clients it creates next. */
    public List<String> serverCommands(long serverPid) {
        if (serverPid < 1) {
            throw new InvalidValueException("mpsLimits.serverPid", serverPid, "must be a process id (at least 1)");
        }
        return List.of("set_device_pinned_mem_limit " + serverPid + " 0 " + memoryMib + "M",
                "set_active_thread_percentage " + serverPid + " " + activeThreadPercentage);
    }

    @Override
    public String toString() {
        return memoryMib + " MiB, " + activeThreadPercentage + "% of the threads";
    }
}
