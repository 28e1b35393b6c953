package io.qgpu.kubernetes.dra;

import io.qgpu.kubernetes.node.dra.DraNames;

/**
 * The names the driver shares with the kubelet and the container runtime. The names it shares with the DRA
 * allocator and the cluster (the driver name, the device attributes and capacities of its ResourceSlice) are
 * {@link DraNames}.
 *
 * <p>Thread safety: constants only.
 */
public final class DriverNames {
    /** The registration socket's file name in the kubelet's registrar directory. */
    public static final String REGISTRATION_SOCKET = DraNames.DRIVER + "-reg.sock";
    /** The DRA service socket's file name in the driver's directory under the kubelet's plugins directory. */
    public static final String DRA_SOCKET = "dra.sock";
    /** {@code PluginInfo.type} of a DRA driver. */
    public static final String PLUGIN_TYPE = "DRAPlugin";
    /** The kubelet's name for the v1 DRA service. */
    public static final String SERVICE_V1 = "v1.DRAPlugin";
    /** The kubelet's name for the v1beta1 DRA service. */
    public static final String SERVICE_V1BETA1 = "v1beta1.DRAPlugin";
    /** The kubelet's registrar directory. */
    public static final String DEFAULT_REGISTRAR_DIR = "/var/lib/kubelet/plugins_registry";
    /** The kubelet's plugins directory. */
    public static final String DEFAULT_PLUGINS_DIR = "/var/lib/kubelet/plugins";
    /** The CDI root container runtimes read by default. */
    public static final String DEFAULT_CDI_ROOT = "/var/run/cdi";
    /** Linux's limit on a Unix socket path, in bytes including the terminating zero. */
    public static final int SOCKET_PATH_MAX = 108;

    private DriverNames() {
    }

    /** The published name of the GPU with this NVML index ({@link DraNames#deviceName}). */
    public static String deviceName(int index) {
        return DraNames.deviceName(index);
    }

    /** The ResourceSlice of a node: one per node, named after it ({@link DraNames#sliceName}). */
    public static String sliceName(String node) {
        return DraNames.sliceName(node);
    }

    /** The CDI device name of a claim's device: derived from the claim uid. */
    public static String cdiDeviceName(String claimUid, String device) {
        return claimUid + "-" + device;
    }
}
