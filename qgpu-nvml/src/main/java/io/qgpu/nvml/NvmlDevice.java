package io.qgpu.nvml;

import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.PointerByReference;
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
    /**
     * A safety bound on NVLink numbers, above NVML_NVLINK_MAX_LINKS (18 before NVML 13.3, 36 from 13.3).
     */
    static final int MAX_NVLINKS = 64;
    /** C {@code unsigned long}s passed to the affinity queries: 64 x 64 = 4096 CPUs or NUMA nodes. */
    static final int AFFINITY_WORDS = 64;
    /** {@code gpuInstanceId}/{@code computeInstanceId} of a process when MIG is off (all bits set). */
    public static final long NO_INSTANCE = 0xFFFFFFFFL;

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

    /** The GPU's UUID, {@code GPU-...} ({@code MIG-...} for a MIG device). */
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

    /**
     * Utilization over the driver's last sample period. A value above 100% (seen from real drivers) is
     * clamped to 100 with a debug log. MIG-enabled GPUs and MIG devices answer {@code NOT_SUPPORTED}.
     */
    public NvmlUtilization utilization() {
        NvmlStructs.Utilization u = new NvmlStructs.Utilization();
        check("nvmlDeviceGetUtilizationRates", nvml.call("nvmlDeviceGetUtilizationRates",
                api -> api.nvmlDeviceGetUtilizationRates(handle, u)));
        return new NvmlUtilization(clampPercent("utilization.gpu", u.gpu), clampPercent("utilization.memory", u.memory));
    }

    /**
     * The compute processes on this GPU ({@code nvmlDeviceGetComputeRunningProcesses_v3}), asking for
     * the count first and growing the buffer while processes keep appearing. On a MIG-enabled GPU each
     * process carries the ids of its GPU and compute instance; an unprivileged process (a container) gets
     * {@code NO_PERMISSION} for such a GPU's list and must ask each MIG device ({@link #migDevices()}).
     */
    public List<NvmlProcess> runningComputeProcesses() {
        return DeviceLists.processes(nvml, uuid, "nvmlDeviceGetComputeRunningProcesses_v3",
                (api, count, infos) -> api.nvmlDeviceGetComputeRunningProcesses_v3(handle, count, infos));
    }

    /**
     * The MPS client processes on this GPU ({@code nvmlDeviceGetMPSComputeRunningProcesses_v3}): tenants
     * that run through the MPS server and are not in {@link #runningComputeProcesses()}.
     */
    public List<NvmlProcess> runningMpsProcesses() {
        return DeviceLists.processes(nvml, uuid, "nvmlDeviceGetMPSComputeRunningProcesses_v3",
                (api, count, infos) -> api.nvmlDeviceGetMPSComputeRunningProcesses_v3(handle, count, infos));
    }

    /**
     * Process utilization samples newer than {@code lastSeenMicros} ({@code nvmlDeviceGetProcessUtilization});
     * empty when there are none ({@code NOT_FOUND}). Real drivers answer the count query with a fixed
     * buffer size (about 100) rather than the true count; the call that fills the buffer says how many it
     * wrote. A sample with a value above 100% (seen from real drivers) is skipped with a debug log; the
     * others are kept.
     *
     * @param lastSeenMicros 0 for all the driver holds, or the newest timestamp seen so far
     */
    public List<NvmlProcessUtilization> processUtilization(long lastSeenMicros) {
        Validate.atLeast("nvml.processUtilization.lastSeenMicros", lastSeenMicros, 0);
        return DeviceLists.samples(nvml, handle, uuid, lastSeenMicros);
    }

    /** The GPU's PCI address ({@code nvmlDeviceGetPciInfo_v3}). */
    public NvmlPciInfo pciInfo() {
        NvmlStructs.PciInfo p = new NvmlStructs.PciInfo();
        check("nvmlDeviceGetPciInfo_v3", nvml.call("nvmlDeviceGetPciInfo_v3", api -> api.nvmlDeviceGetPciInfo_v3(handle, p)));
        return toPci(p);
    }

    /**
     * How far apart two GPUs are on PCIe ({@code nvmlDeviceGetTopologyCommonAncestor}). Some platforms (VMs)
     * answer {@code NOT_SUPPORTED}, thrown as {@link NvmlException}.
     */
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

    /** What is at the far end of NVLink {@code link} ({@code nvmlDeviceGetNvLinkRemoteDeviceType}). */
    public NvmlNvLinkRemoteType nvLinkRemoteType(int link) {
        Validate.atLeast("nvml.nvLink.link", link, 0);
        IntByReference type = new IntByReference();
        check("nvmlDeviceGetNvLinkRemoteDeviceType", nvml.call("nvmlDeviceGetNvLinkRemoteDeviceType",
                api -> api.nvmlDeviceGetNvLinkRemoteDeviceType(handle, link, type)));
        return NvmlNvLinkRemoteType.of(type.getValue());
    }

    /**
     * Every NVLink of this GPU with its state and, when up, its remote end and what that is. Links are
     * numbered from 0 until NVML answers {@code INVALID_ARGUMENT} (their count differs between generations:
     * 12 on A100, 18 on H100; NVML_NVLINK_MAX_LINKS is 18 before NVML 13.3 and 36 from 13.3). Empty when the
     * GPU has no NVLink ({@code NOT_SUPPORTED}). An active link whose remote side NVML cannot identify (the
     * lookups fail, as in some VMs) has no remote and the type {@link NvmlNvLinkRemoteType#UNKNOWN}; only
     * {@code GPU_IS_LOST} from those lookups is thrown.
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
            if (!active) {
                out.add(new NvmlNvLink(link, false, Optional.empty(), NvmlNvLinkRemoteType.UNKNOWN));
                continue;
            }
            Optional<NvmlPciInfo> remote = Optional.empty();
            NvmlNvLinkRemoteType type = NvmlNvLinkRemoteType.UNKNOWN;
            try {
                remote = Optional.of(nvLinkRemotePciInfo(link));
                type = nvLinkRemoteType(link);
            } catch (NvmlException e) {
                if (e.result() == NvmlReturn.GPU_IS_LOST) {
                    throw e;
                }
                LOG.debug("{}: NVLink {} is up but NVML cannot identify its remote side ({} from {})", uuid, link,
                        e.result().cName(), e.function());
            }
            out.add(new NvmlNvLink(link, true, remote, type));
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

    /**
     * The compute mode ({@code nvmlDeviceGetComputeMode}); {@link NvmlComputeMode#UNRECOGNIZED} for a value this
     * binding does not know.
     */
    public NvmlComputeMode computeMode() {
        IntByReference mode = new IntByReference();
        check("nvmlDeviceGetComputeMode", nvml.call("nvmlDeviceGetComputeMode",
                api -> api.nvmlDeviceGetComputeMode(handle, mode)));
        return NvmlComputeMode.of(mode.getValue());
    }

    /**
     * Sets the compute mode ({@code nvmlDeviceSetComputeMode}). NVML requires root (admin) rights: an unprivileged
     * caller gets {@link NvmlReturn#NO_PERMISSION}, thrown as {@link NvmlException} like every other failing code.
     * The mode lasts until it is set again or the driver is reloaded.
     *
     * @throws InvalidValueException naming {@code nvml.setComputeMode.mode} for {@link NvmlComputeMode#UNRECOGNIZED}
     */
    public void setComputeMode(NvmlComputeMode mode) {
        Validate.notNull("nvml.setComputeMode.mode", mode);
        if (mode == NvmlComputeMode.UNRECOGNIZED) {
            throw new InvalidValueException("nvml.setComputeMode.mode", mode, "must be a compute mode NVML knows ("
                    + "DEFAULT, EXCLUSIVE_THREAD, PROHIBITED or EXCLUSIVE_PROCESS)");
        }
        check("nvmlDeviceSetComputeMode", nvml.call("nvmlDeviceSetComputeMode",
                api -> api.nvmlDeviceSetComputeMode(handle, mode.nvmlValue())));
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
     * The GPU's own NUMA node id ({@code nvmlDeviceGetNumaNodeId}), where the GPU's memory is itself a
     * NUMA node (coherent platforms such as Grace Hopper); -1 elsewhere: the library lacks the function
     * (before NVML 12.x), the platform does not support it (x86: {@code NOT_SUPPORTED}), or the driver
     * reports no node. The NUMA node nearest to the GPU for CPU memory is {@link #memoryAffinity}.
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

    /**
     * The NUMA nodes whose memory is nearest the GPU ({@code nvmlDeviceGetMemoryAffinity}), ascending;
     * empty when the platform does not say ({@code NOT_SUPPORTED}, as in many VMs).
     */
    public List<Integer> memoryAffinity(NvmlAffinityScope scope) {
        Validate.notNull("nvml.memoryAffinity.scope", scope);
        return bitmask("nvmlDeviceGetMemoryAffinity",
                (api, buf) -> api.nvmlDeviceGetMemoryAffinity(handle, AFFINITY_WORDS, buf, scope.nvmlValue()));
    }

    /**
     * The CPUs nearest the GPU ({@code nvmlDeviceGetCpuAffinityWithinScope}), ascending; empty when the
     * platform does not say ({@code NOT_SUPPORTED}).
     */
    public List<Integer> cpuAffinity(NvmlAffinityScope scope) {
        Validate.notNull("nvml.cpuAffinity.scope", scope);
        return bitmask("nvmlDeviceGetCpuAffinityWithinScope",
                (api, buf) -> api.nvmlDeviceGetCpuAffinityWithinScope(handle, AFFINITY_WORDS, buf, scope.nvmlValue()));
    }

    @FunctionalInterface
    private interface MaskCall {
        int invoke(io.qgpu.nvml.internal.NvmlNative api, Pointer words);
    }

    private List<Integer> bitmask(String fn, MaskCall c) {
        com.sun.jna.Memory words = new com.sun.jna.Memory((long) AFFINITY_WORDS * Native.LONG_SIZE);
        words.clear();
        int rc = nvml.call(fn, api -> c.invoke(api, words));
        if (rc == NvmlReturn.NOT_SUPPORTED.code()) {
            return List.of();
        }
        check(fn, rc);
        List<Integer> bits = new ArrayList<>();
        int bitsPerWord = Native.LONG_SIZE * 8;
        for (int w = 0; w < AFFINITY_WORDS; w++) {
            long word = words.getNativeLong((long) w * Native.LONG_SIZE).longValue();
            for (int b = 0; b < bitsPerWord; b++) {
                if ((word >>> b & 1L) != 0) {
                    bits.add(w * bitsPerWord + b);
                }
            }
        }
        return List.copyOf(bits);
    }

    // ---- MIG ---------------------------------------------------------------------------------------

    /** Whether this handle is a MIG device ({@code nvmlDeviceIsMigDeviceHandle}). */
    public boolean isMigDevice() {
        return readUnsigned("nvmlDeviceIsMigDeviceHandle", ref -> nvml.call("nvmlDeviceIsMigDeviceHandle",
                api -> api.nvmlDeviceIsMigDeviceHandle(handle, ref))) != 0;
    }

    /**
     * The MIG devices (instances) of this GPU, by slot: {@code nvmlDeviceGetMaxMigDeviceCount} slots (0 when
     * MIG is off), empty slots ({@code NOT_FOUND}) left out. Empty on GPUs without MIG.
     */
    public List<NvmlMigDevice> migDevices() {
        int max = readUnsigned("nvmlDeviceGetMaxMigDeviceCount", ref -> nvml.call("nvmlDeviceGetMaxMigDeviceCount",
                api -> api.nvmlDeviceGetMaxMigDeviceCount(handle, ref)));
        List<NvmlMigDevice> out = new ArrayList<>();
        for (int slot = 0; slot < max; slot++) {
            int s = slot;
            PointerByReference ref = new PointerByReference();
            int rc = nvml.call("nvmlDeviceGetMigDeviceHandleByIndex",
                    api -> api.nvmlDeviceGetMigDeviceHandleByIndex(handle, s, ref));
            if (rc == NvmlReturn.NOT_FOUND.code()) {
                continue;
            }
            if (rc == NvmlReturn.NOT_SUPPORTED.code()) {
                return List.of();
            }
            check("nvmlDeviceGetMigDeviceHandleByIndex", rc);
            NvmlDevice mig = nvml.deviceForHandle(ref.getValue(), uuid + " MIG slot " + slot);
            out.add(new NvmlMigDevice(this, slot, mig, mig.gpuInstanceId(), mig.computeInstanceId()));
        }
        return List.copyOf(out);
    }

    /** The GPU a MIG device belongs to ({@code nvmlDeviceGetDeviceHandleFromMigDeviceHandle}). */
    public NvmlDevice migParent() {
        PointerByReference ref = new PointerByReference();
        check("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", nvml.call("nvmlDeviceGetDeviceHandleFromMigDeviceHandle",
                api -> api.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(handle, ref)));
        return nvml.deviceForHandle(ref.getValue(), "parent of " + uuid);
    }

    /** The GPU instance id of a MIG device ({@code nvmlDeviceGetGpuInstanceId}). */
    public int gpuInstanceId() {
        return readUnsigned("nvmlDeviceGetGpuInstanceId", ref -> nvml.call("nvmlDeviceGetGpuInstanceId",
                api -> api.nvmlDeviceGetGpuInstanceId(handle, ref)));
    }

    /** The compute instance id of a MIG device ({@code nvmlDeviceGetComputeInstanceId}). */
    public int computeInstanceId() {
        return readUnsigned("nvmlDeviceGetComputeInstanceId", ref -> nvml.call("nvmlDeviceGetComputeInstanceId",
                api -> api.nvmlDeviceGetComputeInstanceId(handle, ref)));
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

    private int clampPercent(String field, int raw) {
        long v = Integer.toUnsignedLong(raw);
        if (v > 100) {
            LOG.debug("{}: NVML reported {} = {}%, above 100; taken as 100", uuid, field, v);
            return 100;
        }
        return (int) v;
    }

    static NvmlPciInfo toPci(NvmlStructs.PciInfo p) {
        return new NvmlPciInfo(p.busIdString(), Native.toString(p.busIdLegacy, StandardCharsets.US_ASCII.name()),
                Integer.toUnsignedLong(p.domain), Integer.toUnsignedLong(p.bus), Integer.toUnsignedLong(p.device),
                Integer.toUnsignedLong(p.pciDeviceId), Integer.toUnsignedLong(p.pciSubSystemId));
    }
}
