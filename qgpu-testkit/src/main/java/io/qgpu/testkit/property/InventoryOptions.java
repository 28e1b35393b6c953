package io.qgpu.testkit.property;

import io.qgpu.api.GranularityRules;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Validate;
import io.qgpu.testkit.machines.MachineType;
import io.qgpu.testkit.machines.Machines;
import java.util.List;

/**
 * What {@link QgpuGens#inventories} may generate: nodes of the given machine types (shrinking
 * towards fewer nodes and the first type), with a {@code pool} label, some unhealthy GPUs and,
 * when {@link #reservedFor()} is on, GPUs kept for one priority class.
 *
 * <pre>{@code
 * InventoryOptions small = InventoryOptions.defaults().withMaxNodes(2).withUnhealthy(false);
 * }</pre>
 *
 * @param rules       granularity rules of the inventory
 * @param machines    machine types to draw from, simplest first
 * @param minNodes    fewest nodes
 * @param maxNodes    most nodes
 * @param labels      whether nodes get a {@value QgpuGens#POOL_LABEL} label ({@code a} or {@code b})
 * @param unhealthy   whether some GPUs are unhealthy
 * @param reservedFor whether some nodes keep their GPUs for one priority class
 * @param host        whether nodes declare CPU and host memory ({@link QgpuGens#HOST_CPU_MILLIS},
 *                    {@link QgpuGens#HOST_MEMORY_GIB}; some leave them untracked)
 *
 * <p>Thread safety: immutable.
 */
public record InventoryOptions(GranularityRules rules, List<MachineType> machines, int minNodes, int maxNodes,
                               boolean labels, boolean unhealthy, boolean reservedFor, boolean host) {

    public InventoryOptions {
        Validate.notNull("inventoryOptions.rules", rules);
        machines = Validate.list("inventoryOptions.machines", machines);
        if (machines.isEmpty()) {
            throw new InvalidValueException("inventoryOptions.machines", machines, "must not be empty");
        }
        Validate.between("inventoryOptions.minNodes", minNodes, 1, 10_000);
        Validate.between("inventoryOptions.maxNodes", maxNodes, minNodes, 10_000);
    }

    /** Options without host resources. */
    public InventoryOptions(GranularityRules rules, List<MachineType> machines, int minNodes, int maxNodes,
                            boolean labels, boolean unhealthy, boolean reservedFor) {
        this(rules, machines, minNodes, maxNodes, labels, unhealthy, reservedFor, false);
    }

    /**
     * qGPU rules; 1 to 3 nodes of GN7 1xT4, PCIe 4xT4, GN10Xp 4xV100, DGX-1V or DGX H100; pool
     * labels and unhealthy GPUs on, GPUs kept for a class and host resources off.
     */
    public static InventoryOptions defaults() {
        return new InventoryOptions(GranularityRules.ofDefaults(),
                List.of(Machines.GN7_2XLARGE32, Machines.PCIE_4X_T4, Machines.GN10XP_10XLARGE160, Machines.DGX_1V,
                        Machines.DGX_H100), 1, 3, true, true, false, false);
    }

    public InventoryOptions withRules(GranularityRules r) {
        return new InventoryOptions(r, machines, minNodes, maxNodes, labels, unhealthy, reservedFor, host);
    }

    public InventoryOptions withMachines(List<MachineType> m) {
        return new InventoryOptions(rules, m, minNodes, maxNodes, labels, unhealthy, reservedFor, host);
    }

    public InventoryOptions withNodes(int min, int max) {
        return new InventoryOptions(rules, machines, min, max, labels, unhealthy, reservedFor, host);
    }

    public InventoryOptions withMaxNodes(int max) {
        return new InventoryOptions(rules, machines, Math.min(minNodes, max), max, labels, unhealthy, reservedFor, host);
    }

    public InventoryOptions withLabels(boolean on) {
        return new InventoryOptions(rules, machines, minNodes, maxNodes, on, unhealthy, reservedFor, host);
    }

    public InventoryOptions withUnhealthy(boolean on) {
        return new InventoryOptions(rules, machines, minNodes, maxNodes, labels, on, reservedFor, host);
    }

    public InventoryOptions withReservedFor(boolean on) {
        return new InventoryOptions(rules, machines, minNodes, maxNodes, labels, unhealthy, on, host);
    }

    public InventoryOptions withHost(boolean on) {
        return new InventoryOptions(rules, machines, minNodes, maxNodes, labels, unhealthy, reservedFor, on);
    }
}
