package io.qgpu.nvml;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import io.qgpu.nvml.internal.NvmlNative;
import io.qgpu.nvml.internal.NvmlStructs;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The list queries of {@link NvmlDevice}: ask for the count, then read into a buffer grown while the
 * list keeps growing; process lists and process utilization samples.
 *
 * <p>Thread safety: stateless.
 */
final class DeviceLists {
    private static final Logger LOG = LoggerFactory.getLogger(NvmlDevice.class);
    /** Attempts of a list query whose result keeps growing between the count query and the read. */
    static final int MAX_LIST_ATTEMPTS = 8;

    private DeviceLists() {
    }

    @FunctionalInterface
    interface ListCall {
        int invoke(NvmlNative api, IntByReference count, NvmlStructs.ProcessInfo @Nullable [] infos);
    }

    static List<NvmlProcess> processes(Nvml nvml, String uuid, String fn, ListCall c) {
        IntByReference count = new IntByReference(0);
        int rc = nvml.call(fn, api -> c.invoke(api, count, null));
        if (rc == NvmlReturn.SUCCESS.code()) {
            return List.of();
        }
        for (int attempt = 0; attempt < MAX_LIST_ATTEMPTS; attempt++) {
            if (rc != NvmlReturn.INSUFFICIENT_SIZE.code()) {
                nvml.check(fn, uuid, rc);
            }
            long need = Integer.toUnsignedLong(count.getValue());
            int size = Nvml.toIntExact("processCount", Math.max(1, need + need / 4 + 1));
            NvmlStructs.ProcessInfo[] infos = (NvmlStructs.ProcessInfo[]) new NvmlStructs.ProcessInfo().toArray(size);
            count.setValue(size);
            rc = nvml.call(fn, api -> c.invoke(api, count, infos));
            if (rc == NvmlReturn.SUCCESS.code()) {
                int got = Math.min(size, Nvml.toIntExact("processCount", Integer.toUnsignedLong(count.getValue())));
                List<NvmlProcess> out = new ArrayList<>(got);
                for (int i = 0; i < got; i++) {
                    NvmlStructs.ProcessInfo p = infos[i];
                    p.read();
                    out.add(new NvmlProcess(Integer.toUnsignedLong(p.pid),
                            p.usedGpuMemory < 0 ? -1 : p.usedGpuMemory,
                            Integer.toUnsignedLong(p.gpuInstanceId), Integer.toUnsignedLong(p.computeInstanceId)));
                }
                return List.copyOf(out);
            }
        }
        throw new NvmlException(fn, NvmlReturn.INSUFFICIENT_SIZE.code(), uuid,
                "the process list kept growing over " + MAX_LIST_ATTEMPTS + " attempts", null);
    }

    /** {@link NvmlDevice#processUtilization(long)}. */
    static List<NvmlProcessUtilization> samples(Nvml nvml, Pointer handle, String uuid, long lastSeenMicros) {
        String fn = "nvmlDeviceGetProcessUtilization";
        IntByReference count = new IntByReference(0);
        int rc = nvml.call(fn, api -> api.nvmlDeviceGetProcessUtilization(handle, null, count, lastSeenMicros));
        for (int attempt = 0; attempt <= MAX_LIST_ATTEMPTS; attempt++) {
            if (rc == NvmlReturn.NOT_FOUND.code()) {
                return List.of();
            }
            if (rc == NvmlReturn.SUCCESS.code() && attempt == 0) {
                return List.of(); // the count query succeeded: nothing to read
            }
            if (rc != NvmlReturn.INSUFFICIENT_SIZE.code()) {
                nvml.check(fn, uuid, rc);
            }
            if (attempt == MAX_LIST_ATTEMPTS) {
                break;
            }
            long need = Integer.toUnsignedLong(count.getValue());
            int size = Nvml.toIntExact("sampleCount", Math.max(1, need + need / 4 + 1));
            NvmlStructs.ProcessUtilizationSample[] samples =
                    (NvmlStructs.ProcessUtilizationSample[]) new NvmlStructs.ProcessUtilizationSample().toArray(size);
            count.setValue(size);
            rc = nvml.call(fn, api -> api.nvmlDeviceGetProcessUtilization(handle, samples, count, lastSeenMicros));
            if (rc == NvmlReturn.SUCCESS.code()) {
                int got = Math.min(size, Nvml.toIntExact("sampleCount", Integer.toUnsignedLong(count.getValue())));
                List<NvmlProcessUtilization> out = new ArrayList<>(got);
                for (int i = 0; i < got; i++) {
                    NvmlStructs.ProcessUtilizationSample s = samples[i];
                    s.read();
                    long pid = Integer.toUnsignedLong(s.pid);
                    int[] values = {s.smUtil, s.memUtil, s.encUtil, s.decUtil};
                    if (!allPercent(values)) {
                        LOG.debug("{}: skipped the sample of pid {} at {} us with a value above 100% "
                                + "(sm {}, mem {}, enc {}, dec {})", uuid, pid, s.timeStamp,
                                Integer.toUnsignedLong(s.smUtil), Integer.toUnsignedLong(s.memUtil),
                                Integer.toUnsignedLong(s.encUtil), Integer.toUnsignedLong(s.decUtil));
                        continue;
                    }
                    out.add(new NvmlProcessUtilization(pid, s.timeStamp, s.smUtil, s.memUtil, s.encUtil, s.decUtil));
                }
                return List.copyOf(out);
            }
        }
        throw new NvmlException(fn, NvmlReturn.INSUFFICIENT_SIZE.code(), uuid,
                "the sample list kept growing over " + MAX_LIST_ATTEMPTS + " attempts", null);
    }

    private static boolean allPercent(int[] raw) {
        for (int r : raw) {
            if (Integer.toUnsignedLong(r) > 100) {
                return false;
            }
        }
        return true;
    }
}
