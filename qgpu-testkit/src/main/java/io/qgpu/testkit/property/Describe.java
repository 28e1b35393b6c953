package io.qgpu.testkit.property;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.Selectors;
import io.qgpu.json.Inventory;
import io.qgpu.testkit.machines.Machines;
import java.util.ArrayList;
import java.util.List;

/**
 * Short, readable one-line descriptions of claims, placements and inventories, for failure
 * messages and shrunk cases (the records' own {@code toString} is complete but long).
 *
 * <pre>{@code
 * Describe.claim(claim);   // "t3: 2 GPU x 4 GiB, compute 20/50, online, anti=a0"
 * }</pre>
 *
 * <p>Thread safety: stateless.
 */
public final class Describe {

    private Describe() {
    }

    /** A claim in one line. */
    public static String claim(Claim c) {
        StringBuilder sb = new StringBuilder(c.tenantId()).append(": ").append(c.gpuCount()).append(" GPU");
        if (c.exclusive()) {
            sb.append(" exclusive");
        } else if (!c.hostOnly()) {
            sb.append(" x ").append(bytes(c.memoryPerGpuBytes())).append(", compute ")
                    .append(c.computeRequest()).append('/').append(c.computeLimit());
        }
        if (!c.host().isNone()) {
            sb.append(", host ").append(c.host().cpuMillis()).append("m CPU ").append(bytes(c.host().memoryBytes()));
        }
        sb.append(", ").append(c.priority().wireName());
        c.locality().affinity().ifPresent(l -> sb.append(", aff=").append(l));
        c.locality().antiAffinity().ifPresent(l -> sb.append(", anti=").append(l));
        c.locality().exclusion().ifPresent(l -> sb.append(", excl=").append(l));
        Selectors s = c.selectors();
        if (!s.isNone()) {
            sb.append(", select");
            if (!s.includeModels().isEmpty()) {
                sb.append(" model in ").append(s.includeModels());
            }
            if (!s.excludeModels().isEmpty()) {
                sb.append(" model not in ").append(s.excludeModels());
            }
            if (!s.includeUuids().isEmpty()) {
                sb.append(" uuid in ").append(s.includeUuids());
            }
            if (!s.excludeUuids().isEmpty()) {
                sb.append(" uuid not in ").append(s.excludeUuids());
            }
            if (!s.nodeLabels().isEmpty()) {
                sb.append(" node labels ").append(s.nodeLabels());
            }
        }
        c.nodePolicy().ifPresent(p -> sb.append(", node policy ").append(p.wireName()));
        c.gpuPolicy().ifPresent(p -> sb.append(", gpu policy ").append(p.wireName()));
        return sb.toString();
    }

    /** A placement in one line: tenant, node and GPUs (by UUID). */
    public static String placement(Placement p) {
        return p.tenantId() + " on " + p.nodeName() + " " + p.gpuUuids();
    }

    /** Bytes as GiB or MiB when whole, else bytes. */
    public static String bytes(long b) {
        if (b % GpuDevice.GIB == 0) {
            return b / GpuDevice.GIB + " GiB";
        }
        if (b % GpuDevice.MIB == 0) {
            return b / GpuDevice.MIB + " MiB";
        }
        return b + " B";
    }

    /** A node in one line: name, machine, labels other than the testkit's own, unhealthy or reserved GPUs. */
    public static String node(Node n) {
        StringBuilder sb = new StringBuilder(n.name()).append(" (")
                .append(n.labels().getOrDefault(Machines.LABEL_MACHINE, n.gpus().size() + " GPU")).append(')');
        List<String> labels = new ArrayList<>();
        n.labels().forEach((k, v) -> {
            if (!k.equals(Machines.LABEL_MACHINE) && !k.equals(Machines.LABEL_INSTANCE_TYPE)
                    && !k.equals(Machines.LABEL_QGPU_POLICY)) {
                labels.add(k + "=" + v);
            }
        });
        if (!labels.isEmpty()) {
            labels.sort(null);
            sb.append(" labels ").append(labels);
        }
        List<String> unhealthy = new ArrayList<>();
        List<String> reserved = new ArrayList<>();
        for (GpuDevice g : n.gpus()) {
            if (!g.healthy()) {
                unhealthy.add("gpu" + g.index());
            }
            g.reservedFor().ifPresent(p -> reserved.add("gpu" + g.index() + " for " + p.wireName()));
        }
        if (!unhealthy.isEmpty()) {
            sb.append(" unhealthy ").append(unhealthy);
        }
        if (!reserved.isEmpty()) {
            boolean all = reserved.size() == n.gpus().size() && n.gpus().stream()
                    .map(GpuDevice::reservedFor).distinct().count() == 1;
            sb.append(all ? " all GPUs for " + n.gpus().get(0).reservedFor().get().wireName() : " kept " + reserved);
        }
        return sb.toString();
    }

    /** An inventory: rules name and one node per line. */
    public static String inventory(Inventory inv) {
        StringBuilder sb = new StringBuilder("rules ").append(inv.rules().name()).append(", nodes:");
        for (Node n : inv.nodes()) {
            sb.append("\n    ").append(node(n));
        }
        return sb.toString();
    }
}
