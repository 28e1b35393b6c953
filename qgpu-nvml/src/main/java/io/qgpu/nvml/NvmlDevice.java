package io.qgpu.nvml;

import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.TopologyLevel;
import io.qgpu.api.Validate;
import io.qgpu.nvml.internal.NvmlStructs;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One GPU of an {@link Nvml} session (an {@code nvmlDevice_t}). Its UUID is read when the object is
 * made; every other method calls NVML each time.
 *
 * <pre>{@code
 * NvmlDevice gpu = nvml.device(0);
 * NvmlMemory mem = gpu.memory();
 * List<NvmlProcess> procs = gpu.runningComputeProcesses();
 * TopologyLevel level = gpu.commonAncestor(nvml.device(1));
 * }</pre>
 *
 * <p>Every method throws {@link NvmlException} on a failing return code; {@code GPU_IS_LOST} also marks
 * the GPU unhealthy in its session. Methods that fill a caller-sized buffer grow it and retry on
 * {@code INSUFFICIENT_SIZE}.
 *
 * <p>Thread safety: thread-safe; holds no mutable state.
 */
public final class NvmlDevice {
    private static final Logger LOG = LoggerFactory.getLogger(NvmlDevice.class);
    /** Attempts of a list query whose result keeps growing between the count query and the read. */
    static final int MAX_LIST_ATTEMPTS = 8;
    /** A safety bound on NVLink numbers, above NVML_NVLINK_MAX_LINKS (36 in NVML 13). */
    static final int MAX_NVLINKS = 64;

    private final Nvml nvml;
    private final Pointer handle;
    private final String uuid;

    NvmlDevice(Nvml nvml, Pointer handle, String uuid) {
        this.nvml = nvml;
        this.handle = handle;
        this.uuid = uuid;
    }

    /** The session this device belongs to. */
    public Nvml session() {
        return nvml;
    }

    Pointer handle() {
        return handle;
    }

    /** The GPU's UUID, {@code GPU-...}. */
    public String uuid() {
        return uuid;
    }

    /** The product name, for example {@code NVIDIA H100 80GB HBM3}. */
    public String name() {
        return nvml.readString("nvmlDeviceGetName", uuid, Nvml.STRING_BUFFER,
                (api, buf, len) -> api.nvmlDeviceGetName(handle, buf, len));
    }

    /** The NVML index (the order NVML enumerates GPUs in, which is PCI bus order). */
    public int index() {
        return readUnsigned("nvmlDeviceGetIndex", ref -> nvml.call("nvmlDeviceGetIndex",
                api -> api.nvmlDeviceGetIndex(handle, ref)));
    }

    /** The device node minor number: the {@code N} of {@code /dev/nvidiaN}. */
    public int minorNumber() {
        return readUnsigned("nvmlDeviceGetMinorNumber", ref -> nvml.call("nvmlDeviceGetMinorNumber",
                api -> api.nvmlDeviceGetMinorNumber(handle, ref)));
    }

    /** Memory totals ({@code nvmlDeviceGetMemoryInfo_v2}). */
    public NvmlMemory memory() {
        NvmlStructs.Memory m = new NvmlStructs.Memory();
        check("nvmlDeviceGetMemoryInfo_v2", nvml.call("nvmlDeviceGetMemoryInfo_v2",
                api -> api.nvmlDeviceGetMemoryInfo_v2(handle, m)));
        return new NvmlMemory(m.total, m.reserved, m.free, m.used);
    }

    /** Utilization over the driver's last sample period. */
    public NvmlUtilization utilization() {
        NvmlStructs.Utilization u = new NvmlStructs.Utilization();
        check("nvmlDeviceGetUtilizationRates", nvml.call("nvmlDeviceGetUtilizationRates",
                api -> api.nvmlDeviceGetUtilizationRates(handle, u)));
        return new NvmlUtilization(percent("utilization.gpu", u.gpu), percent("utilization.memory", u.memory));
    }

    /**
     * The compute processes on this GPU ({@code nvmlDeviceGetComputeRunningProcesses_v3}), asking for
     * the count first and growing the buffer while processes keep appearing.
     */
    public List<NvmlProcess> runningComputeProcesses() {
        String fn = "nvmlDeviceGetComputeRunningProcesses_v3";
        IntByReference count = new IntByReference(0);
        int rc = nvml.call(fn, api -> api.nvmlDeviceGetComputeRunningProcesses_v3(handle, count, null));
        if (rc == NvmlReturn.SUCCESS.code()) {
            return List.of();
        }
        for (int attempt = 0; attempt < MAX_LIST_ATTEMPTS; attempt++) {
            if (rc != NvmlReturn.INSUFFICIENT_SIZE.code()) {
                check(fn, rc);
            }
            long need = Integer.toUnsignedLong(count.getValue());
            int size = Nvml.toIntExact("processCount", Math.max(1, need + need / 4 + 1));
            NvmlStructs.ProcessInfo[] infos = (NvmlStructs.ProcessInfo[]) new NvmlStructs.ProcessInfo().toArray(size);
            count.setValue(size);
            rc = nvml.call(fn, api -> api.nvmlDeviceGetComputeRunningProcesses_v3(handle, count, infos));
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

    /**
     * Process utilization samples newer than {@code lastSeenMicros} ({@code nvmlDeviceGetProcessUtilization});
     * empty when there are none ({@code NOT_FOUND}).
     *
     * @param lastSeenMicros 0 for all the driver holds, or the newest timestamp seen so far
     */
    public List<NvmlProcessUtilization> processUtilization(long lastSeenMicros) {
        Validate.atLeast("nvml.processUtilization.lastSeenMicros", lastSeenMicros, 0);
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
                check(fn, rc);
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
                    out.add(new NvmlProcessUtilization(Integer.toUnsignedLong(s.pid), s.timeStamp,
                            percent("smUtil", s.smUtil), percent("memUtil", s.memUtil),
                            percent("encUtil", s.encUtil), percent("decUtil", s.decUtil)));
                }
                return List.copyOf(out);
            }
        }
        throw new NvmlException(fn, NvmlReturn.INSUFFICIENT_SIZE.code(), uuid,
                "the sample list kept growing over " + MAX_LIST_ATTEMPTS + " attempts", null);
    }

    /** The GPU's PCI address ({@code nvmlDeviceGetPciInfo_v3}). */
    public NvmlPciInfo pciInfo() {
        NvmlStructs.PciInfo p = new NvmlStructs.PciInfo();
        check("nvmlDeviceGetPciInfo_v3", nvml.call("nvmlDeviceGetPciInfo_v3", api -> api.nvmlDeviceGetPciInfo_v3(handle, p)));
        return toPci(p);
    }

    /** How far apart two GPUs are on PCIe ({@code nvmlDeviceGetTopologyCommonAncestor}). */
    public TopologyLevel commonAncestor(NvmlDevice other) {
        Validate.notNull("nvml.commonAncestor.other", other);
        IntByReference level = new IntByReference();
        String fn = "nvmlDeviceGetTopologyCommonAncestor";
        int rc = nvml.call(fn, api -> api.nvmlDeviceGetTopologyCommonAncestor(handle, other.handle, level));
        if (rc != NvmlReturn.SUCCESS.code()) {
            // the code does not say which of the two GPUs is lost: report it without a GPU
            throw new NvmlException(fn, rc, uuid + " and " + other.uuid);
        }
        try {
            return TopologyLevel.fromNvml(level.getValue());
        } catch (InvalidValueException e) {
            throw new NvmlException(fn, NvmlReturn.UNKNOWN.code(), uuid,
                    "NVML returned an unknown topology level " + level.getValue(), e);
        }
    }

    /** Whether NVLink {@code link} is up ({@code nvmlDeviceGetNvLinkState}). */
    public boolean nvLinkActive(int link) {
        Validate.atLeast("nvml.nvLink.link", link, 0);
        IntByReference state = new IntByReference();
        check("nvmlDeviceGetNvLinkState", nvml.call("nvmlDeviceGetNvLinkState",
                api -> api.nvmlDeviceGetNvLinkState(handle, link, state)));
        return state.getValue() != 0;
    }

    /** The PCI device at the far end of NVLink {@code link} ({@code nvmlDeviceGetNvLinkRemotePciInfo_v2}). */
    public NvmlPciInfo nvLinkRemotePciInfo(int link) {
        Validate.atLeast("nvml.nvLink.link", link, 0);
        NvmlStructs.PciInfo p = new NvmlStructs.PciInfo();
        check("nvmlDeviceGetNvLinkRemotePciInfo_v2", nvml.call("nvmlDeviceGetNvLinkRemotePciInfo_v2",
                api -> api.nvmlDeviceGetNvLinkRemotePciInfo_v2(handle, link, p)));
        return toPci(p);
    }

    /**
     * Every NVLink of this GPU with its state and, when up, its remote end. Links are numbered from 0
     * until NVML answers {@code INVALID_ARGUMENT} (their count differs between generations: 12, 18, 36).
     * Empty when the GPU has no NVLink ({@code NOT_SUPPORTED}).
     */
    public List<NvmlNvLink> nvLinks() {
        List<NvmlNvLink> out = new ArrayList<>();
        for (int link = 0; link < MAX_NVLINKS; link++) {
            int l = link;
            IntByReference state = new IntByReference();
            int rc = nvml.call("nvmlDeviceGetNvLinkState", api -> api.nvmlDeviceGetNvLinkState(handle, l, state));
            if (rc == NvmlReturn.INVALID_ARGUMENT.code()) {
                return List.copyOf(out);
            }
            if (rc == NvmlReturn.NOT_SUPPORTED.code()) {
                if (link > 0) {
                    LOG.debug("{}: NVLink {} not supported after {} links", uuid, link, link);
                }
                return List.copyOf(out);
            }
            check("nvmlDeviceGetNvLinkState", rc);
            boolean active = state.getValue() != 0;
            out.add(new NvmlNvLink(link, active, active ? Optional.of(nvLinkRemotePciInfo(link)) : Optional.empty()));
        }
        LOG.warn("{}: NVML reports more than {} NVLinks; reading only the first {}", uuid, MAX_NVLINKS, MAX_NVLINKS);
        return List.copyOf(out);
    }

    /** The MIG mode; {@link NvmlMigMode#NOT_SUPPORTED} on GPUs without MIG. */
    public NvmlMigMode migMode() {
        IntByReference current = new IntByReference();
        IntByReference pending = new IntByReference();
        int rc = nvml.call("nvmlDeviceGetMigMode", api -> api.nvmlDeviceGetMigMode(handle, current, pending));
        if (rc == NvmlReturn.NOT_SUPPORTED.code()) {
            return NvmlMigMode.NOT_SUPPORTED;
        }
        check("nvmlDeviceGetMigMode", rc);
        return new NvmlMigMode(NvmlMigMode.State.of(Integer.toUnsignedLong(current.getValue())),
                NvmlMigMode.State.of(Integer.toUnsignedLong(pending.getValue())));
    }

    /** The CUDA compute capability. */
    public NvmlComputeCapability computeCapability() {
        IntByReference major = new IntByReference();
        IntByReference minor = new IntByReference();
        check("nvmlDeviceGetCudaComputeCapability", nvml.call("nvmlDeviceGetCudaComputeCapability",
                api -> api.nvmlDeviceGetCudaComputeCapability(handle, major, minor)));
        return new NvmlComputeCapability(major.getValue(), minor.getValue());
    }

    /**
     * The NUMA node closest to the GPU, or -1 when unknown: the library lacks
     * {@code nvmlDeviceGetNumaNodeId} (before NVML 12.x), the platform does not support it, or the
     * driver reports no node.
     */
    public int numaNode() {
        String fn = "nvmlDeviceGetNumaNodeId";
        if (!nvml.hasOptional(fn)) {
            return -1;
        }
        IntByReference node = new IntByReference();
        int rc = nvml.call(fn, api -> api.nvmlDeviceGetNumaNodeId(handle, node));
        if (rc == NvmlReturn.NOT_SUPPORTED.code()) {
            return -1;
        }
        check(fn, rc);
        long value = Integer.toUnsignedLong(node.getValue());
        return value > 4095 ? -1 : (int) value;
    }

    @Override
    public String toString() {
        return "NvmlDevice[" + uuid + "]";
    }

    // ---- helpers -----------------------------------------------------------------------------------

    private void check(String function, int rc) {
        nvml.check(function, uuid, rc);
    }

    @FunctionalInterface
    private interface RefCall {
        int invoke(IntByReference ref);
    }

    private int readUnsigned(String function, RefCall c) {
        IntByReference ref = new IntByReference();
        check(function, c.invoke(ref));
        return Nvml.toIntExact(function, Integer.toUnsignedLong(ref.getValue()));
    }

    private int percent(String field, int raw) {
        long v = Integer.toUnsignedLong(raw);
        if (v > 100) {
            throw new NvmlException("nvml " + field, NvmlReturn.UNKNOWN.code(), uuid,
                    "NVML reported " + v + "%, above 100", null);
        }
        return (int) v;
    }

    static NvmlPciInfo toPci(NvmlStructs.PciInfo p) {
        return new NvmlPciInfo(p.busIdString(), Native.toString(p.busIdLegacy, StandardCharsets.US_ASCII.name()),
                Integer.toUnsignedLong(p.domain), Integer.toUnsignedLong(p.bus), Integer.toUnsignedLong(p.device),
                Integer.toUnsignedLong(p.pciDeviceId), Integer.toUnsignedLong(p.pciSubSystemId));
    }
}
