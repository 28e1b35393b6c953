package io.qgpu.nvml.discovery;

import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Node;
import io.qgpu.api.Validate;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The result of a discovery: the node model for the scheduler, the NVML facts of each physical GPU and
 * of each pair of them, the driver's versions, and the GPUs that could not be read.
 *
 * <p>The node's devices are the physical GPUs in {@link #devices()} order, except that a MIG-enabled GPU is
 * replaced by its MIG instances when discovery reports instances as devices (the default): then the node
 * has fewer or more devices than {@link #devices()}.
 *
 * <pre>{@code
 * NvmlInventory inv = discovery.inventory("node-a");
 * GpuLink l = inv.gpuLink(0, 1);       // an NvLink of 18 lanes through NVSwitches on a DGX H100
 * String label = l.label();            // "NV18"
 * inv.pair(0, 1).commonAncestor();     // Optional[NODE]
 * }</pre>
 *
 * @param node          the node: schedulable devices (GPUs or MIG instances) and the link of every pair
 * @param devices       NVML facts of the physical GPUs, by NVML index
 * @param pairs         NVML facts of every pair of physical GPUs: (0,1), (0,2) ... (1,2) ...
 * @param driverVersion driver version
 * @param nvmlVersion   NVML version
 * @param unreachable   GPUs NVML lists but that could not be read (lost, no permission...), in words
 *
 * <p>Thread safety: immutable.
 */
public record NvmlInventory(Node node, List<NvmlDeviceInfo> devices, List<NvmlPairFacts> pairs, String driverVersion,
                            String nvmlVersion, List<String> unreachable) {

    public NvmlInventory {
        Validate.notNull("nvmlInventory.node", node);
        devices = Validate.list("nvmlInventory.devices", devices);
        pairs = Validate.list("nvmlInventory.pairs", pairs);
        Validate.notNull("nvmlInventory.driverVersion", driverVersion);
        Validate.notNull("nvmlInventory.nvmlVersion", nvmlVersion);
        unreachable = Validate.list("nvmlInventory.unreachable", unreachable);
        int n = devices.size();
        if (pairs.size() != n * (n - 1) / 2) {
            throw new InvalidValueException("nvmlInventory.pairs.size", pairs.size(),
                    "must be one per pair of the " + n + " devices (" + n * (n - 1) / 2 + ")");
        }
        int k = 0;
        for (int a = 0; a < n; a++) {
            for (int b = a + 1; b < n; b++) {
                NvmlPairFacts p = pairs.get(k);
                if (p.a() != a || p.b() != b) {
                    throw new InvalidValueException("nvmlInventory.pairs[" + k + "]", p.a() + "," + p.b(),
                            "must be the pair " + a + "," + b);
                }
                k++;
            }
        }
        Set<String> known = new HashSet<>();
        for (NvmlDeviceInfo d : devices) {
            known.add(d.uuid());
            d.migInstances().forEach(m -> known.add(m.uuid()));
        }
        for (int i = 0; i < node.gpus().size(); i++) {
            String uuid = node.gpus().get(i).uuid();
            if (!known.contains(uuid)) {
                throw new InvalidValueException("nvmlInventory.node.gpus[" + i + "].uuid", uuid,
                        "is neither a discovered GPU nor one of their MIG instances");
            }
        }
    }

    /** The link between the node's devices at positions {@code a} and {@code b} of {@link Node#gpus()}. */
    public GpuLink link(int a, int b) {
        return node.topology().link(a, b);
    }

    /** The NVML facts of the physical GPUs at positions {@code a != b} of {@link #devices()}. */
    public NvmlPairFacts pair(int a, int b) {
        int n = devices.size();
        if (a < 0 || a >= n || b < 0 || b >= n || a == b) {
            throw new InvalidValueException("nvmlInventory.pair", a + "," + b,
                    "positions must differ and lie between 0 and " + (n - 1));
        }
        int lo = Math.min(a, b);
        int hi = Math.max(a, b);
        return pairs.get(lo * (2 * n - lo - 1) / 2 + (hi - lo - 1));
    }

    /** The link discovery made of the physical GPUs at positions {@code a != b} of {@link #devices()}. */
    public GpuLink gpuLink(int a, int b) {
        return pair(a, b).link();
    }

    /** Every MIG instance of every GPU, by GPU and slot. */
    public List<MigInstance> migInstances() {
        return devices.stream().flatMap(d -> d.migInstances().stream()).toList();
    }

    /** The MIG instance with this UUID, if one was discovered. */
    public Optional<MigInstance> migInstance(String uuid) {
        return migInstances().stream().filter(m -> m.uuid().equals(uuid)).findFirst();
    }

    /** The physical GPU a node device is, or belongs to (the parent of a MIG instance). */
    public Optional<NvmlDeviceInfo> deviceOf(GpuDevice nodeDevice) {
        Validate.notNull("nvmlInventory.deviceOf", nodeDevice);
        String uuid = nodeDevice.uuid();
        String parent = migInstance(uuid).map(MigInstance::parentUuid).orElse(uuid);
        return devices.stream().filter(d -> d.uuid().equals(parent)).findFirst();
    }
}
