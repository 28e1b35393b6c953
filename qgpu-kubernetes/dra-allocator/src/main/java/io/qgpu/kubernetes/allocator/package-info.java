/**
 * qgpu's DRA allocation controller: it places the ResourceClaims of driver {@code gpu.qgpu.io} with the qgpu
 * placement engine and writes their {@code status.allocation}, so that kube-scheduler only places the pod on the
 * node chosen and the node's DRA driver prepares exactly what was allocated. See the module's README.
 */
package io.qgpu.kubernetes.allocator;
