package io.qgpu.kubernetes.dra;

import io.grpc.stub.StreamObserver;
import io.qgpu.kubernetes.dra.v1beta1.DRAPluginGrpc;
import io.qgpu.kubernetes.dra.v1beta1.Device;
import io.qgpu.kubernetes.dra.v1beta1.NodePrepareResourceResponse;
import io.qgpu.kubernetes.dra.v1beta1.NodePrepareResourcesRequest;
import io.qgpu.kubernetes.dra.v1beta1.NodePrepareResourcesResponse;
import io.qgpu.kubernetes.dra.v1beta1.NodeUnprepareResourceResponse;
import io.qgpu.kubernetes.dra.v1beta1.NodeUnprepareResourcesRequest;
import io.qgpu.kubernetes.dra.v1beta1.NodeUnprepareResourcesResponse;
import java.util.List;

/**
 * The kubelet's {@code v1beta1.DRAPlugin} service over {@link ClaimPreparer}: one answer per claim of the
 * request, keyed by uid (v1beta1 has no share id).
 *
 * <p>Thread safety: thread-safe.
 */
final class DraServiceV1beta1 extends DRAPluginGrpc.DRAPluginImplBase {
    private final ClaimPreparer preparer;

    DraServiceV1beta1(ClaimPreparer preparer) {
        this.preparer = preparer;
    }

    @Override
    public void nodePrepareResources(NodePrepareResourcesRequest request, StreamObserver<NodePrepareResourcesResponse> out) {
        List<ClaimPreparer.ClaimRef> refs = request.getClaimsList().stream()
                .map(c -> new ClaimPreparer.ClaimRef(c.getNamespace(), c.getName(), c.getUid())).toList();
        NodePrepareResourcesResponse.Builder r = NodePrepareResourcesResponse.newBuilder();
        preparer.prepare(refs).forEach((uid, outcome) -> {
            NodePrepareResourceResponse.Builder one = NodePrepareResourceResponse.newBuilder();
            if (outcome instanceof ClaimPreparer.Outcome.Failed f) {
                one.setError(f.error());
            } else if (outcome instanceof ClaimPreparer.Outcome.Prepared p) {
                for (PreparedClaim.Device d : p.claim().devices()) {
                    Device.Builder db = Device.newBuilder().addAllRequestNames(d.requestNames()).setPoolName(d.pool())
                            .setDeviceName(d.device()).addAllCdiDeviceIds(d.cdiIds());
                    one.addDevices(db);
                }
            }
            r.putClaims(uid, one.build());
        });
        out.onNext(r.build());
        out.onCompleted();
    }

    @Override
    public void nodeUnprepareResources(NodeUnprepareResourcesRequest request, StreamObserver<NodeUnprepareResourcesResponse> out) {
        List<ClaimPreparer.ClaimRef> refs = request.getClaimsList().stream()
                .map(c -> new ClaimPreparer.ClaimRef(c.getNamespace(), c.getName(), c.getUid())).toList();
        NodeUnprepareResourcesResponse.Builder r = NodeUnprepareResourcesResponse.newBuilder();
        preparer.unprepare(refs).forEach((uid, error) -> r.putClaims(uid, NodeUnprepareResourceResponse.newBuilder().setError(error).build()));
        out.onNext(r.build());
        out.onCompleted();
    }
}
