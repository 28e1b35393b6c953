package io.qgpu.kubernetes.deviceplugin;

import io.fabric8.kubernetes.client.KubernetesClient;

/**
 * The local cluster's way to the device plugin's {@link KubernetesPodDecisions} without the {@code spec.nodeName}
 * field selector: fabric8's mock API server answers no field selector, so the pods are listed whole and the node is
 * checked on the plugin's side (as it is anyway). In the device plugin's package because that constructor is
 * package-private; this sample's jar is not a module.
 */
public final class LocalClusterDecisions {
    private LocalClusterDecisions() {
    }

    /** The extender's decisions for {@code nodeName}, read from all pods. */
    public static PodDecisions withoutFieldSelector(KubernetesClient client, String nodeName) {
        return new KubernetesPodDecisions(client, nodeName, false);
    }
}
