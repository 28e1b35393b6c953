package io.qgpu.kubernetes.node.dra;

/**
 * The names of qgpu's Dynamic Resource Allocation protocol that the node's DRA driver (which publishes the
 * ResourceSlices and prepares the claims) and the DRA allocator (which reads the slices and allocates the claims)
 * must agree on.
 *
 * <p>Thread safety: constants only.
 */
public final class DraNames {
    /** The DRA driver name: ResourceSlices' {@code spec.driver}, allocation results' {@code driver}. */
    public static final String DRIVER = "gpu.qgpu.io";
    /** The DeviceClass the deploy files create for the driver's devices. */
    public static final String DEVICE_CLASS = DRIVER;
    /** Capacity of a device: its memory in bytes. */
    public static final String CAPACITY_MEMORY = "memory";
    /** Capacity of a device: its compute in percent of one GPU (100). */
    public static final String CAPACITY_CORES = "cores";
    /** Capacity of a device: how many claims it may hold under the granularity rules; each allocation consumes 1. */
    public static final String CAPACITY_TENANTS = "tenants";
    /** Device attribute: the GPU's UUID as NVML reports it. */
    public static final String ATTRIBUTE_UUID = "uuid";
    /** Device attribute: the GPU's NVML index. */
    public static final String ATTRIBUTE_INDEX = "index";
    /** Device attribute: the GPU's product name ({@code NVIDIA H100 80GB HBM3}). */
    public static final String ATTRIBUTE_PRODUCT_NAME = "productName";
    /** Device attribute: the CPU NUMA node the GPU is attached to (left out when NVML does not know it). */
    public static final String ATTRIBUTE_NUMA_NODE = "numaNode";
    /** Device attribute: {@code N} of the GPU's device node {@code /dev/nvidiaN}. */
    public static final String ATTRIBUTE_MINOR = "minor";
    /** Device attribute: the GPU's CUDA compute capability as a version ({@code 9.0.0}). */
    public static final String ATTRIBUTE_COMPUTE_CAPABILITY = "computeCapability";
    /** Device attribute: whether MIG is on (left out for a GPU without MIG). */
    public static final String ATTRIBUTE_MIG_ENABLED = "migEnabled";
    /**
     * Device attribute, Kubernetes' standard one (qualified): the PCIe root complex the GPU hangs under, a string
     * such as {@code pci0000:3a}. Two GPUs of a node with the same value share a host bridge (their PCIe common
     * ancestor is at most {@code PHB}); GPUs with different values meet further up ({@code NODE} or {@code SYS}).
     *
     * <p>qgpu's driver derives it from NVML, which does not name root complexes: the GPUs of the node are
     * grouped by NVML's common-ancestor level (a pair at {@code PHB} or closer is in one group, taken transitively;
     * a pair NVML gives no level for is not), and each group is named {@code pci<domain>:<bus>} after the PCI
     * address of its GPU with the lowest address (domain and bus in lower-case hexadecimal, the domain in four
     * digits, or eight where it does not fit). The value identifies the group on its node and stays the same
     * while the GPUs do; it is not the sysfs name of the root port, so it matches no other driver's
     * {@code pcieRoot} (a NIC's).
     */
    public static final String ATTRIBUTE_PCIE_ROOT = "resource.kubernetes.io/pcieRoot";
    /**
     * Device attribute: the GPU's NVLinks to the other GPUs of its node, a string of at most
     * {@value #MAX_STRING_ATTRIBUTE} characters, left out when the GPU has no NVLink to any of them. Entries
     * separated by {@code ,}, each {@code <peer>:<lanes>} with {@code s} appended when the lanes go through an
     * NVSwitch:
     * <ul>
     *   <li>{@code <peer>} is another GPU's {@value #ATTRIBUTE_INDEX} (the device of the node's pool with that
     *       index), or {@code *}: every other GPU of the node that no entry names;</li>
     *   <li>{@code <lanes>} the NVLink lanes between the two (1 to 64), or {@code 0} for a GPU with no NVLink to
     *       this one (only needed to take it out of {@code *}).</li>
     * </ul>
     * Examples: {@code *:18s} (an NVSwitch box: 18 lanes through the switches to every other GPU, whether it
     * has 8 GPUs or 16); {@code 1:1,2:1,3:2,4:2} (GPU 0 of a DGX-1V hybrid cube mesh: none to 5, 6 and 7);
     * {@code 1:12} (an NVLink bridge to GPU 1); {@code *:18s,3:17s} (a link of GPU 3 down). A pair's entries on
     * its two GPUs agree. The driver writes the shortest of the forms; a GPU whose NVLinks cannot be written in
     * {@value #MAX_STRING_ATTRIBUTE} characters is published without the attribute, with a warning in the driver's
     * log (no machine qgpu models comes near: the longest, a 16-GPU NVSwitch box with links down, needs about 50).
     * {@link NvLinkAttribute} writes and reads it.
     */
    public static final String ATTRIBUTE_NVLINK = "nvlink";
    /** The longest string a device attribute may have ({@code resource.k8s.io/v1}). */
    public static final int MAX_STRING_ATTRIBUTE = 64;
    /** The scheduling gate the allocator's webhook adds and the allocator removes once a pod's claims are allocated. */
    public static final String SCHEDULING_GATE = "qgpu.io/allocate";
    /** The finalizer kube-scheduler adds to a claim it allocates; the resourceclaim controller deallocates such a claim. */
    public static final String ALLOCATION_FINALIZER = "resource.kubernetes.io/delete-protection";

    private DraNames() {
    }

    /** The published name of the GPU with this index: the device's name in the node's ResourceSlice. */
    public static String deviceName(int index) {
        return "gpu-" + index;
    }

    /** The ResourceSlice of a node: one per node, named after it. */
    public static String sliceName(String node) {
        return node + "-" + DRIVER;
    }
}
