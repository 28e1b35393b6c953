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
    /** The scheduling gate the allocator's webhook adds and the allocator removes once a pod's claims are allocated. */
    public static final String SCHEDULING_GATE = "qgpu.io/allocate";
    /** The finalizer kube-scheduler adds to a claim it allocates; the resourceclaim controller deallocates such a claim. */
    public static final String ALLOCATION_FINALIZER = "resource.kubernetes.io/delete-protection";

    private DraNames() {
    }
}
