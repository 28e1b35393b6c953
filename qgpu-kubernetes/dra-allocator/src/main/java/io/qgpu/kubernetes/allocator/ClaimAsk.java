package io.qgpu.kubernetes.allocator;

import io.qgpu.api.Claim;
import java.util.List;

/**
 * A ResourceClaim of qgpu's device class as qgpu's engine sees it: one qgpu {@link Claim} (tenant id = the claim's
 * uid; the same slice on each of its GPUs, or whole GPUs) and the claim's requests in order, each with how many of
 * the claim's GPUs it gets. The GPUs of a placement go to the requests in this order: the first {@code count} to
 * the first request, and so on.
 *
 * @param namespace the claim's namespace
 * @param name      the claim's name
 * @param uid       the claim's uid (the qgpu tenant id)
 * @param requests  the requests, in the claim's order
 * @param claim     the qgpu claim ({@code gpuCount} = the sum of the requests' counts), without GPU selectors
 * @param selectors the claim's device selectors, which become the claim's GPU selectors when it is placed (some
 *                  need the published GPUs to evaluate)
 *
 * <p>Thread safety: immutable.
 */
record ClaimAsk(String namespace, String name, String uid, List<Request> requests, Claim claim, DeviceSelectors selectors) {
    ClaimAsk {
        requests = List.copyOf(requests);
    }

    /**
     * One request of the claim.
     *
     * @param name  the request's name (what an allocation result names)
     * @param count how many GPUs it asks for
     */
    record Request(String name, int count) {
    }

    /** {@code namespace/name}. */
    String key() {
        return namespace + "/" + name;
    }
}
