package io.qgpu.kubernetes.deviceplugin;

/**
 * The names this plugin shares with the scheduler extender (resource and pod annotations) and the
 * kubelet (API version, socket names). The extender's values are repeated here rather than taken from
 * its module, so that the plugin does not carry the extender; a test checks that they still match.
 *
 * <p>Thread safety: constants only.
 */
public final class Names {

    /** The extended resource the plugin advertises: the extender's GPU count resource. */
    public static final String RESOURCE = "qgpu.io/gpu";

    /** Pod annotation written by the extender at bind: the placement as {@code QgpuJson.writePlacement} writes it. */
    public static final String PLACEMENT = "qgpu.io/placement";

    /** Pod annotation written by the extender at bind: the node the placement is on. */
    public static final String NODE = "qgpu.io/node";

    /**
     * Pod annotation this plugin writes once it applied the extender's placement: the virtual device
     * ids, comma-separated. Outside the extender's {@code qgpu.io/} prefix, which the extender keeps
     * for itself (it refuses unknown {@code qgpu.io/} keys).
     */
    public static final String ALLOCATED = "device-plugin.qgpu.io/allocated";

    /** The device plugin API version the plugin speaks. */
    public static final String API_VERSION = "v1beta1";

    /** The kubelet's registration socket, in the device plugin directory. */
    public static final String KUBELET_SOCKET = "kubelet.sock";

    /** This plugin's socket, in the device plugin directory. */
    public static final String PLUGIN_SOCKET = "qgpu.sock";

    /** Container annotation (to the runtime): the physical GPU UUIDs. */
    public static final String CONTAINER_GPUS = io.qgpu.kubernetes.node.PlacementEdits.ANNOTATION_GPUS;

    /** Container annotation (to the runtime): the qgpu tenant id of the allocation. */
    public static final String CONTAINER_TENANT = io.qgpu.kubernetes.node.PlacementEdits.ANNOTATION_TENANT;

    /** Environment variable with the virtual device ids the kubelet allocated. */
    public static final String ENV_VIRTUAL_DEVICES = "QGPU_VIRTUAL_DEVICES";

    private Names() {
    }
}
