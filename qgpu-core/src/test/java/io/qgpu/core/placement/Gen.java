package io.qgpu.core.placement;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.Health;
import io.qgpu.api.Locality;
import io.qgpu.api.Node;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Selectors;
import io.qgpu.api.TopologyLevel;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/** Seeded random inventories and claims (plain SplittableRandom; the testkit is not available to core). */
final class Gen {
    private Gen() {
    }

    static final String[] MODELS = {"Tesla T4", "Tesla V100-SXM2-32GB", "NVIDIA A100-SXM4-40GB"};
    static final long[] MEMORY_GIB = {16, 32, 40};
    static final String[] LABELS = {"red", "blue", "green"};

    /** A node of 1..8 GPUs with random models, health, class reservations and links. */
    static Node node(SplittableRandom rnd, String name) {
        int gpus = 1 + rnd.nextInt(8);
        Node.Builder b = Node.builder(name).label("zone", rnd.nextBoolean() ? "a" : "b");
        int model = rnd.nextInt(MODELS.length);
        for (int i = 0; i < gpus; i++) {
            int m = rnd.nextInt(4) == 0 ? rnd.nextInt(MODELS.length) : model;
            GpuDevice.Builder g = GpuDevice.builder(name + "-g" + i).index(i).model(MODELS[m]).memoryGiB(MEMORY_GIB[m]);
            if (rnd.nextInt(12) == 0) {
                g.health(Health.UNHEALTHY);
            }
            if (rnd.nextInt(8) == 0) {
                g.reservedFor(rnd.nextBoolean() ? PriorityClass.ONLINE : PriorityClass.OFFLINE);
            }
            b.gpu(g.build());
        }
        TopologyLevel[] levels = TopologyLevel.values();
        b.defaultLink(new GpuLink.Pcie(levels[rnd.nextInt(levels.length)]));
        for (int i = 0; i < gpus; i++) {
            for (int j = i + 1; j < gpus; j++) {
                if (rnd.nextInt(3) == 0) {
                    b.link(i, j, new GpuLink.NvLink(1 + rnd.nextInt(4)));
                } else if (rnd.nextInt(3) == 0) {
                    b.link(i, j, new GpuLink.Pcie(levels[rnd.nextInt(levels.length)]));
                }
            }
        }
        return b.build();
    }

    static List<Node> cluster(SplittableRandom rnd, int maxNodes) {
        int n = 1 + rnd.nextInt(maxNodes);
        List<Node> nodes = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            nodes.add(node(rnd, "n" + i));
        }
        return nodes;
    }

    /** A claim that follows qGPU's granularity (1 GiB, 5%), with random class, locality, selectors and overrides. */
    static Claim claim(SplittableRandom rnd, String id, List<Node> nodes) {
        Claim.Builder b = Claim.builder(id).gpus(rnd.nextInt(5) == 0 ? 2 + rnd.nextInt(3) : 1);
        if (rnd.nextInt(8) == 0) {
            b.exclusive();
        } else {
            int req = 5 * rnd.nextInt(11);
            int lim = Math.max(req, 5 * (1 + rnd.nextInt(20)));
            b.memoryGiB(1 + rnd.nextInt(12)).compute(req, lim);
        }
        b.priority(rnd.nextBoolean() ? PriorityClass.ONLINE : PriorityClass.OFFLINE);
        Locality l = Locality.none();
        if (rnd.nextInt(6) == 0) {
            l = l.withAffinity("aff-" + LABELS[rnd.nextInt(LABELS.length)]);
        }
        if (rnd.nextInt(4) == 0) {
            l = l.withAntiAffinity("anti-" + LABELS[rnd.nextInt(LABELS.length)]);
        }
        if (rnd.nextInt(5) == 0) {
            l = l.withExclusion("team-" + LABELS[rnd.nextInt(LABELS.length)]);
        }
        b.locality(l);
        if (rnd.nextInt(6) == 0) {
            Selectors.Builder s = Selectors.builder();
            switch (rnd.nextInt(4)) {
                case 0 -> s.includeModel(MODELS[rnd.nextInt(MODELS.length)]);
                case 1 -> s.excludeModel(MODELS[rnd.nextInt(MODELS.length)]);
                case 2 -> {
                    Node n = nodes.get(rnd.nextInt(nodes.size()));
                    s.excludeUuid(n.gpus().get(rnd.nextInt(n.gpus().size())).uuid());
                }
                default -> s.nodeLabel("zone", rnd.nextBoolean() ? "a" : "b");
            }
            b.selectors(s.build());
        }
        if (rnd.nextInt(4) == 0) {
            b.nodePolicy(rnd.nextBoolean() ? PlacementPolicy.BINPACK : PlacementPolicy.SPREAD);
        }
        if (rnd.nextInt(4) == 0) {
            b.gpuPolicy(rnd.nextBoolean() ? PlacementPolicy.BINPACK : PlacementPolicy.SPREAD);
        }
        return b.build();
    }
}
