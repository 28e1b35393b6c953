package io.qgpu.kubernetes.node.sharing;

import io.qgpu.api.Claim;
import io.qgpu.api.Placement;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Slice;
import java.util.ArrayList;
import java.util.List;

/** Placements for the sharing tests. */
final class Placements {
    static final String GPU_A = "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6";
    static final String GPU_B = "GPU-11112222-3333-4444-5555-666677778888";

    private Placements() {
    }

    static Placement shared(long bytes, int request, int limit, PriorityClass priority, String... gpus) {
        Claim c = Claim.builder("team-a/job").gpus(gpus.length).memoryBytes(bytes).compute(request, limit).priority(priority).build();
        List<Slice> slices = new ArrayList<>();
        for (String g : gpus) {
            slices.add(new Slice(g, bytes, request, limit));
        }
        return new Placement(c, "node-a", slices);
    }

    static Placement exclusive(String... gpus) {
        Claim c = Claim.builder("team-a/train").gpus(gpus.length).exclusive().priority(PriorityClass.OFFLINE).build();
        List<Slice> slices = new ArrayList<>();
        for (String g : gpus) {
            slices.add(new Slice(g, 80L << 30, 100, 100));
        }
        return new Placement(c, "node-a", slices);
    }

    static Placement hostOnly() {
        return new Placement(Claim.builder("team-a/cpu").hostOnly().cpuMillis(500).build(), "node-a", List.of());
    }
}
