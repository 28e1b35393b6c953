package io.qgpu.kubernetes.deviceplugin;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.Placement;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Slice;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** Extender decisions in memory: pods in bind order; records what was applied. */
final class RecordingDecisions implements PodDecisions {
    final List<PendingPod> pods = new ArrayList<>();
    final Map<String, List<String>> applied = new ConcurrentHashMap<>();

    /** A pod whose placement puts {@code memGiB} and compute {@code request}/{@code limit} on each of these GPUs. */
    RecordingDecisions pod(String ns, String name, long memGiB, int request, int limit, String... gpus) {
        Claim claim = Claim.builder(ns + "/" + name).gpus(gpus.length).memoryGiB(memGiB).compute(request, limit)
                .priority(PriorityClass.ONLINE).build();
        List<Slice> slices = new ArrayList<>();
        for (String g : gpus) {
            slices.add(new Slice(g, memGiB * GpuDevice.GIB, request, limit));
        }
        pods.add(new PendingPod(ns, name, "uid-" + name, new Placement(claim, "node-a", slices)));
        return this;
    }

    @Override
    public synchronized List<PendingPod> pending(int gpuCount) {
        return pods.stream().filter(p -> !applied.containsKey(p.key()) && p.placement().slices().size() == gpuCount).toList();
    }

    @Override
    public synchronized void applied(PendingPod pod, List<String> deviceIds) {
        applied.put(pod.key(), List.copyOf(deviceIds));
    }

    @Override
    public synchronized void withdrawn(PendingPod pod) {
        applied.remove(pod.key());
    }
}
