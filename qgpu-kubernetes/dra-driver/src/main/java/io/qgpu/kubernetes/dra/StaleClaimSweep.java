package io.qgpu.kubernetes.dra;

import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Unprepares the claims the kubelet will never unprepare: a prepared claim whose ResourceClaim the API server no
 * longer has (the pod was force-deleted, the node drained while the driver was down) or has under another uid
 * (deleted and created again under the same name) is stale, and its reservation, saved state, CDI spec and
 * directories go as at an unprepare. Each claim is looked up by its namespace and name (a cheap read), then its
 * uid compared; a claim that cannot be read (the API server down, a 403) is left alone until the next sweep,
 * so an outage never unprepares a claim in use. The driver sweeps once at start and then on its timer.
 *
 * <pre>{@code
 * StaleClaimSweep sweep = new StaleClaimSweep(client, claims);
 * List<String> gone = sweep.sweep();   // the uids unprepared
 * }</pre>
 *
 * <p>Thread safety: thread-safe (reads run outside {@link PreparedClaims}' lock; each unprepare takes it).
 */
final class StaleClaimSweep {
    private static final Logger LOG = LoggerFactory.getLogger(StaleClaimSweep.class);

    private final KubernetesClient client;
    private final PreparedClaims claims;

    StaleClaimSweep(KubernetesClient client, PreparedClaims claims) {
        this.client = client;
        this.claims = claims;
    }

    /**
     * One sweep.
     *
     * @return the uids of the claims found stale and unprepared
     */
    List<String> sweep() {
        List<String> gone = new ArrayList<>();
        int unread = 0;
        for (PreparedClaim c : claims.all()) {
            ResourceClaim rc;
            try {
                rc = client.resources(ResourceClaim.class).inNamespace(c.namespace()).withName(c.name()).get();
            } catch (KubernetesClientException e) {
                unread++;
                LOG.info("stale-claim sweep: claim {} ({}) cannot be read now ({}); checked again at the next sweep", c.key(), c.uid(),
                        e.getCode() == 0 ? e.getMessage() : "HTTP " + e.getCode());
                continue;
            }
            String why;
            if (rc == null) {
                why = "the API server no longer has it";
            } else if (rc.getMetadata() != null && !c.uid().equals(rc.getMetadata().getUid())) {
                why = "the API server's claim of that name has uid " + rc.getMetadata().getUid();
            } else {
                continue;
            }
            try {
                if (claims.unprepare(c.uid())) {
                    LOG.warn("stale-claim sweep: unprepared claim {} ({}): {}", c.key(), c.uid(), why);
                    gone.add(c.uid());
                }
            } catch (RuntimeException e) {
                LOG.error("stale-claim sweep: claim {} ({}) is stale ({}) but could not be unprepared: {}", c.key(), c.uid(), why,
                        e.getMessage());
            }
        }
        if (unread > 0) {
            LOG.info("stale-claim sweep: {} claim(s) could not be checked", unread);
        }
        return List.copyOf(gone);
    }
}
