package io.qgpu.nvml.usage;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Validate;
import io.qgpu.api.spi.ProcessUsageSample;
import io.qgpu.api.spi.ProcessUsageSource;
import io.qgpu.nvml.Nvml;
import io.qgpu.nvml.NvmlDevice;
import io.qgpu.nvml.NvmlException;
import io.qgpu.nvml.NvmlProcessUtilization;
import io.qgpu.nvml.NvmlReturn;
import io.qgpu.nvml.NvmlUtilization;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * Samples GPU usage through NVML and maps processes to tenants: device utilization, per-process
 * memory of compute processes and MPS clients ({@code nvmlDeviceGetComputeRunningProcesses_v3},
 * {@code nvmlDeviceGetMPSComputeRunningProcesses_v3}) and per-process SM utilization
 * ({@code nvmlDeviceGetProcessUtilization}). Also a {@link ProcessUsageSource} for the runtime gate.
 *
 * <p>Real drivers: on a MIG-enabled GPU (or a MIG instance, addressed by its {@code MIG-...} UUID) device
 * utilization is {@code NOT_SUPPORTED} and is reported as -1; each process is mapped to its MIG instance;
 * when NVML refuses the GPU's process lists ({@code NO_PERMISSION}, as in a container) the lists of its MIG
 * instances are read instead. Samples above 100% are skipped (see {@link NvmlDevice#processUtilization}).
 *
 * <pre>{@code
 * NvmlUsageSampler sampler = NvmlUsageSampler.builder(nvml)
 *         .tenants(TenantResolver.of(Map.of(4242L, "job-a")))
 *         .build();
 * GpuUsage u = sampler.sample(gpuUuid);            // each call covers the period since the last one
 * List<ProcessUsageSample> s = sampler.samples(gpuUuid, 0);
 * }</pre>
 *
 * <p>On GPUs without per-process samples (MIG enabled: {@code NOT_SUPPORTED}), {@link #sample(String)} still
 * reports memory and says so with {@link GpuUsage#smSampled()}; {@link #samples(String, long)} throws the
 * {@link NvmlException}, so that the consumer knows it gets no data.
 *
 * <p>Thread safety: thread-safe. {@link #sample(String)} calls for one GPU are serialized so that each
 * period is reported once; different GPUs are sampled in parallel.
 */
public final class NvmlUsageSampler implements ProcessUsageSource {
    private final Nvml nvml;
    private final TenantResolver tenants;
    private final Map<String, NvmlDevice> devices = new ConcurrentHashMap<>();
    private final Map<String, long[]> lastSeen = new ConcurrentHashMap<>();

    private NvmlUsageSampler(Nvml nvml, TenantResolver tenants) {
        this.nvml = nvml;
        this.tenants = tenants;
    }

    public static Builder builder(Nvml nvml) {
        return new Builder(nvml);
    }

    /**
     * Usage of the GPU over the period since the previous call for it (the first call: everything the
     * driver still holds).
     *
     * @throws InvalidValueException if NVML knows no GPU with this UUID
     * @throws NvmlException         if NVML fails
     */
    public GpuUsage sample(String gpuUuid) {
        NvmlDevice device = device(gpuUuid);
        long[] last = lastSeen.computeIfAbsent(gpuUuid, k -> new long[1]);
        synchronized (last) {
            NvmlUtilization util = utilization(device);
            ProcessLister.Result running = ProcessLister.list(device);
            List<NvmlProcessUtilization> samples;
            boolean smSampled = true;
            try {
                samples = device.processUtilization(last[0]);
            } catch (NvmlException e) {
                if (e.result() != NvmlReturn.NOT_SUPPORTED) {
                    throw e;
                }
                samples = List.of(); // MIG-enabled GPUs have no per-process samples; memory is still known
                smSampled = false;
            }
            Map<Long, NvmlProcessUtilization> newest = new HashMap<>();
            long newestTs = last[0];
            for (NvmlProcessUtilization s : samples) {
                newest.merge(s.pid(), s, (a, b) -> a.timestampMicros() >= b.timestampMicros() ? a : b);
                newestTs = Math.max(newestTs, s.timestampMicros());
            }
            last[0] = newestTs;
            Map<Long, Long> memory = ProcessLister.memory(running);
            TreeMap<Long, Boolean> pids = new TreeMap<>();
            memory.keySet().forEach(pid -> pids.put(pid, true));
            newest.keySet().forEach(pid -> pids.put(pid, true));
            List<ProcessUsage> processes = new ArrayList<>();
            Map<String, List<ProcessUsage>> byTenant = new TreeMap<>();
            for (long pid : pids.keySet()) {
                NvmlProcessUtilization s = newest.get(pid);
                Optional<String> tenant = Validate.notNull("tenantResolver(" + pid + ")", tenants.tenantOf(pid));
                ProcessLister.Listed listed = running.byPid().get(pid);
                ProcessUsage pu = new ProcessUsage(pid, tenant, memory.getOrDefault(pid, -1L),
                        s == null ? 0 : s.smPercent(), s == null ? 0 : s.memoryPercent(), s != null,
                        listed == null ? Optional.empty() : listed.migInstance(), listed != null && listed.mps());
                processes.add(pu);
                tenant.ifPresent(t -> byTenant.computeIfAbsent(t, k -> new ArrayList<>()).add(pu));
            }
            Map<String, TenantProcessUsage> tenantUsage = new TreeMap<>();
            byTenant.forEach((t, list) -> tenantUsage.put(t, new TenantProcessUsage(t,
                    list.stream().map(ProcessUsage::pid).toList(),
                    list.stream().mapToLong(p -> Math.max(0, p.usedMemoryBytes())).sum(),
                    list.stream().mapToInt(ProcessUsage::smUtilPercent).sum())));
            return new GpuUsage(gpuUuid, util == null ? -1 : util.gpuPercent(), util == null ? -1 : util.memoryPercent(),
                    processes, tenantUsage, newestTs, smSampled, running.listed());
        }
    }

    /**
     * The processes NVML lists on the GPU now (compute processes and MPS clients, with their MIG instance and
     * tenant), without utilization samples: each has {@code sampled == false} and 0% SM. Empty when NVML
     * refuses every list. Does not move the period of {@link #sample(String)}.
     *
     * @throws InvalidValueException if NVML knows no GPU with this UUID
     */
    public List<ProcessUsage> processes(String gpuUuid) {
        ProcessLister.Result listed = ProcessLister.list(device(gpuUuid));
        List<ProcessUsage> out = new ArrayList<>();
        new TreeMap<>(listed.byPid()).forEach((pid, l) -> out.add(new ProcessUsage(pid,
                Validate.notNull("tenantResolver(" + pid + ")", tenants.tenantOf(pid)), l.usedMemoryBytes(), 0, 0,
                false, l.migInstance(), l.mps())));
        return List.copyOf(out);
    }

    /**
     * {@inheritDoc}
     *
     * <p>Reads {@code nvmlDeviceGetProcessUtilization} since {@code sinceMicros} and joins each sample with
     * the memory of the running process of that pid. Does not move the period of {@link #sample(String)}.
     */
    @Override
    public List<ProcessUsageSample> samples(String gpuUuid, long sinceMicros) {
        Validate.atLeast("processUsage.sinceMicros", sinceMicros, 0);
        NvmlDevice device = device(gpuUuid);
        List<NvmlProcessUtilization> samples = device.processUtilization(sinceMicros);
        if (samples.isEmpty()) {
            return List.of();
        }
        Map<Long, Long> memory = ProcessLister.memory(ProcessLister.list(device));
        List<ProcessUsageSample> out = new ArrayList<>(samples.size());
        for (NvmlProcessUtilization s : samples) {
            out.add(new ProcessUsageSample(gpuUuid, s.pid(), s.timestampMicros(), s.smPercent(), s.memoryPercent(),
                    memory.getOrDefault(s.pid(), ProcessUsageSample.UNKNOWN_MEMORY)));
        }
        out.sort(Comparator.comparingLong(ProcessUsageSample::timestampMicros).thenComparingLong(ProcessUsageSample::pid));
        return List.copyOf(out);
    }

    /** Device utilization, or null where NVML does not give it (MIG: {@code NOT_SUPPORTED}). */
    private static @Nullable NvmlUtilization utilization(NvmlDevice device) {
        try {
            return device.utilization();
        } catch (NvmlException e) {
            if (e.result() == NvmlReturn.NOT_SUPPORTED || e.result() == NvmlReturn.NO_PERMISSION) {
                return null;
            }
            throw e;
        }
    }

    private NvmlDevice device(String gpuUuid) {
        Validate.notBlank("usage.gpuUuid", gpuUuid);
        NvmlDevice d = devices.get(gpuUuid);
        if (d != null) {
            return d;
        }
        try {
            d = nvml.deviceByUuid(gpuUuid);
        } catch (NvmlException e) {
            if (e.result() == NvmlReturn.NOT_FOUND || e.result() == NvmlReturn.INVALID_ARGUMENT) {
                throw new InvalidValueException("usage.gpuUuid", gpuUuid, "NVML knows no such GPU");
            }
            throw e;
        }
        NvmlDevice raced = devices.putIfAbsent(gpuUuid, d);
        return raced != null ? raced : d;
    }

    /**
     * Options of a sampler.
     *
     * <p>Thread safety: not thread-safe; use from one thread.
     */
    public static final class Builder {
        private final Nvml nvml;
        private TenantResolver tenants = TenantResolver.none();

        private Builder(Nvml nvml) {
            this.nvml = Validate.notNull("usage.nvml", nvml);
        }

        /** How pids map to tenants (default: none known). */
        public Builder tenants(TenantResolver resolver) {
            this.tenants = Validate.notNull("usage.tenants", resolver);
            return this;
        }

        public NvmlUsageSampler build() {
            return new NvmlUsageSampler(nvml, tenants);
        }
    }
}
