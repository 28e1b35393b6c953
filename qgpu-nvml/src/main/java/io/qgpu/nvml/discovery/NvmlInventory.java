package io.qgpu.nvml.discovery;

import io.qgpu.api.GpuLink;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Node;
import io.qgpu.api.Validate;
import java.util.List;

/**
 * The result of a discovery: the node model for the scheduler, the NVML facts of each GPU in the same
 * order as {@link Node#gpus()}, the driver's versions, and the GPUs that could not be read.
 *
 * <pre>{@code
 * NvmlInventory inv = discovery.inventory("node-a");
 * GpuLink l = inv.link(0, 1);          // NvLink[lanes=18] on a DGX H100
 * String label = l.label();            // "NV18"
 * }</pre>
 *
 * @param node          the node: GPUs and the link of every pair
 * @param devices       NVML facts, {@code devices.get(i)} describing {@code node.gpus().get(i)}
 * @param driverVersion driver version
 * @param nvmlVersion   NVML version
 * @param unreachable   GPUs NVML lists but that could not be read (lost, no permission...), in words
 *
 * <p>Thread safety: immutable.
 */
public record NvmlInventory(Node node, List<NvmlDeviceInfo> devices, String driverVersion, String nvmlVersion,
                            List<String> unreachable) {

    public NvmlInventory {
        Validate.notNull("nvmlInventory.node", node);
        devices = Validate.list("nvmlInventory.devices", devices);
        Validate.notNull("nvmlInventory.driverVersion", driverVersion);
        Validate.notNull("nvmlInventory.nvmlVersion", nvmlVersion);
        unreachable = Validate.list("nvmlInventory.unreachable", unreachable);
        if (devices.size() != node.gpus().size()) {
            throw new InvalidValueException("nvmlInventory.devices.size", devices.size(),
                    "must equal the node's GPU count " + node.gpus().size());
        }
        for (int i = 0; i < devices.size(); i++) {
            if (!devices.get(i).uuid().equals(node.gpus().get(i).uuid())) {
                throw new InvalidValueException("nvmlInventory.devices[" + i + "].uuid", devices.get(i).uuid(),
                        "must be the UUID of node.gpus[" + i + "] (" + node.gpus().get(i).uuid() + ")");
            }
        }
    }

    /** The link between the GPUs at positions {@code a} and {@code b}. */
    public GpuLink link(int a, int b) {
        return node.topology().link(a, b);
    }
}
