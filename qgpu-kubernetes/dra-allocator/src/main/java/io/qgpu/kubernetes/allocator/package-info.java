/**
 * qgpu's DRA allocation controller: it places the ResourceClaims of driver {@code gpu.qgpu.io} with the qgpu
 * placement engine and writes their {@code status.allocation}, so that kube-scheduler only places the pod on the
 * node chosen and the node's DRA driver prepares exactly what was allocated. See the module's README.
 * {@code ./qgpu-local-cluster} ({@code samples/local-cluster}) runs it with {@code --no-webhook} beside the DRA driver
 * on fabric8's mock API server, and its test checks that the driver prepares exactly what the allocator allocated.
 */
package io.qgpu.kubernetes.allocator;
