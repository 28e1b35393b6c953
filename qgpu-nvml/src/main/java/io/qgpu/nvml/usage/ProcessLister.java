package io.qgpu.nvml.usage;

import io.qgpu.nvml.NvmlDevice;
import io.qgpu.nvml.NvmlException;
import io.qgpu.nvml.NvmlMigDevice;
import io.qgpu.nvml.NvmlProcess;
import io.qgpu.nvml.NvmlReturn;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * Lists the processes of one GPU the way real drivers allow: compute processes and MPS clients together,
 * each mapped to its MIG instance on a MIG-enabled GPU, and, where NVML refuses the GPU's own lists
 * ({@code NO_PERMISSION}: a MIG-enabled GPU seen from a container), the lists of its MIG instances.
 *
 * <p>Thread safety: stateless.
 */
final class ProcessLister {

    /** A process of a GPU, by pid: memory summed over its entries, the MIG instance and whether it is MPS. */
    record Listed(long pid, long usedMemoryBytes, Optional<String> migInstance, boolean mps) {
    }

    /** The processes by pid, or empty when NVML listed none of them. */
    record Result(Map<Long, Listed> byPid, boolean listed) {
    }

    private ProcessLister() {
    }

    static Result list(NvmlDevice device) {
        List<NvmlMigDevice> migs = migDevices(device);
        Map<Long, Listed> out = new LinkedHashMap<>();
        List<NvmlProcess> compute = refusable(device::runningComputeProcesses);
        List<NvmlProcess> mps = refusable(device::runningMpsProcesses);
        if (compute != null || migs.isEmpty()) {
            add(out, compute, false, migs, Optional.empty());
            add(out, mps, true, migs, Optional.empty());
            return new Result(out, compute != null);
        }
        boolean listed = false;
        for (NvmlMigDevice m : migs) {
            Optional<String> instance = Optional.of(m.device().uuid());
            List<NvmlProcess> c = refusable(m.device()::runningComputeProcesses);
            List<NvmlProcess> s = refusable(m.device()::runningMpsProcesses);
            listed |= c != null || s != null;
            add(out, c, false, List.of(), instance);
            add(out, s, true, List.of(), instance);
        }
        return new Result(out, listed);
    }

    /** The MIG devices of a GPU; none for a GPU without MIG and for a MIG device itself. */
    private static List<NvmlMigDevice> migDevices(NvmlDevice device) {
        if (device.uuid().startsWith("MIG-")) {
            return List.of();
        }
        return device.migDevices();
    }

    /** The list, or null when NVML refuses it ({@code NO_PERMISSION}) or does not support it. */
    private static @Nullable List<NvmlProcess> refusable(Supplier<List<NvmlProcess>> query) {
        try {
            return query.get();
        } catch (NvmlException e) {
            if (e.result() == NvmlReturn.NO_PERMISSION || e.result() == NvmlReturn.NOT_SUPPORTED) {
                return null;
            }
            throw e;
        }
    }

    /**
     * Adds one list: entries of one pid within a list add up (a process on several instances); a pid already
     * listed as a compute process is not counted again as an MPS client.
     */
    private static void add(Map<Long, Listed> out, @Nullable List<NvmlProcess> list, boolean mps,
                            List<NvmlMigDevice> migs, Optional<String> instance) {
        if (list == null) {
            return;
        }
        Map<Long, Listed> mine = new LinkedHashMap<>();
        for (NvmlProcess p : list) {
            Optional<String> where = instance.isPresent() ? instance : instanceOf(p, migs);
            mine.merge(p.pid(), new Listed(p.pid(), p.usedMemoryBytes(), where, mps), (a, b) -> new Listed(a.pid(),
                    a.usedMemoryBytes() < 0 || b.usedMemoryBytes() < 0 ? -1 : a.usedMemoryBytes() + b.usedMemoryBytes(),
                    a.migInstance().equals(b.migInstance()) ? a.migInstance() : Optional.empty(), mps));
        }
        mine.forEach(out::putIfAbsent);
    }

    private static Optional<String> instanceOf(NvmlProcess p, List<NvmlMigDevice> migs) {
        for (NvmlMigDevice m : migs) {
            if (m.runs(p)) {
                return Optional.of(m.device().uuid());
            }
        }
        return Optional.empty();
    }

    /** Memory by pid, -1 where unknown. */
    static Map<Long, Long> memory(Result r) {
        Map<Long, Long> m = new LinkedHashMap<>();
        r.byPid().forEach((pid, l) -> m.put(pid, l.usedMemoryBytes()));
        return m;
    }
}
