package io.qgpu.kubernetes.dra;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodResourceClaim;
import io.fabric8.kubernetes.api.model.PodResourceClaimStatus;
import io.fabric8.kubernetes.api.model.resource.v1.AllocationResult;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceRequestAllocationResult;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimConsumerReference;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.qgpu.kubernetes.node.dra.DraNames;
import io.qgpu.kubernetes.node.sharing.SharingBackend;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The containers that use a ResourceClaim, found when it is prepared, and the two rules that follow from them.
 *
 * <p><b>Which containers use a claim.</b> The pods in the claim's {@code status.reservedFor} (entries with
 * resource {@code pods} of the core group, read by name in the claim's namespace; a pod that is gone, or that
 * has another uid than the entry's, is skipped, and so are consumers that are not pods). A container (an init
 * container too: a sidecar runs beside the others, and a plain one writes the same files before them) uses the
 * claim when one of its {@code resources.claims[].name} names an entry of {@code pod.spec.resourceClaims} that
 * resolves to this claim: directly through {@code resourceClaimName}, or through a template, whose generated
 * claim is named in {@code pod.status.resourceClaimStatuses[name].resourceClaimName}.
 *
 * <p><b>Rule 1, {@code --sharing hami-core}.</b> A shared claim (not a whole GPU) used by more than one
 * container is refused, whether the containers are of one pod or of several: the claim's CDI spec mounts one
 * HAMi-core cache directory into each of them, HAMi-core keys the processes in that file by their PID in their
 * own PID namespace, and every container's first process is PID 1, so the containers would overwrite each
 * other's accounting and the limit would not hold. An exclusive claim has no HAMi-core at all (nothing shares its
 * GPUs, {@code QGPU_SHARING=none}, no cache file), so any number of containers may use it.
 *
 * <p><b>Rule 2, any back end.</b> A container gets one claim of this driver. A container that uses this claim and
 * another claim whose allocation has results of driver {@value DraNames#DRIVER} (found by reading that claim)
 * would get both claims' CDI specs, and the later spec's {@code NVIDIA_VISIBLE_DEVICES}, {@code QGPU_*}, limits
 * and mounts replace the earlier one's. So this claim is refused when the other one is prepared on this node:
 * the claim prepared later is the one refused, and of two that arrive in one NodePrepareResources call (which
 * {@link ClaimPreparer} prepares in request order) the second. The check against the prepared claims runs
 * under {@link PreparedClaims}' lock ({@link PreparedClaims.Admission}), so two prepares at once cannot both
 * pass it.
 *
 * <p><b>When the API server cannot answer.</b> A pod of {@code status.reservedFor}, another claim of one of the
 * containers, or the claim itself that cannot be read (any API error, after the client's own retries) refuses
 * the claim with the reason: it is not prepared without knowing its containers, and the kubelet retries the
 * prepare. A claim whose {@code status.reservedFor} names no pod has no container to check and passes.
 *
 * <p>What it cannot see: the kubelet prepares a claim once per node, so a pod added to {@code reservedFor}
 * after the claim was prepared here never reaches these rules (its containers start with the claim as it is).
 *
 * <pre>{@code
 * ClaimContainers containers = new ClaimContainers(client, SharingBackend.HAMI_CORE);
 * PreparedClaim done = claims.prepare(plan, containers.admission(rc, plan));   // RefusedException names pods and containers
 * }</pre>
 *
 * <p>Thread safety: thread-safe (immutable; the API reads run on the caller's thread).
 */
final class ClaimContainers {
    private static final Logger LOG = LoggerFactory.getLogger(ClaimContainers.class);

    private final KubernetesClient client;
    private final SharingBackend backend;

    /**
     * @param client  the API client that reads pods and claims
     * @param backend the node's sharing back end ({@code --sharing})
     */
    ClaimContainers(KubernetesClient client, SharingBackend backend) {
        this.client = Objects.requireNonNull(client, "client");
        this.backend = Objects.requireNonNull(backend, "backend");
    }

    /**
     * A container that uses the claim.
     *
     * @param namespace   the pod's namespace (the claim's)
     * @param pod         the pod's name
     * @param container   the container's name
     * @param init        whether it is an init container
     * @param otherClaims the names of the other ResourceClaims the container uses, in its order
     */
    record User(String namespace, String pod, String container, boolean init, List<String> otherClaims) {
        User {
            otherClaims = List.copyOf(otherClaims);
        }

        /** {@code container main} or {@code init container proxy}. */
        String kind() {
            return (init ? "init container " : "container ") + container;
        }

        /** {@code container main of pod default/p}. */
        String describe() {
            return kind() + " of pod " + namespace + "/" + pod;
        }
    }

    /**
     * Another claim of this driver that a container of the claim uses.
     *
     * @param key  its {@code namespace/name}
     * @param uid  its uid
     * @param user the container that uses both
     */
    record Sibling(String key, String uid, User user) {
    }

    /**
     * Finds the containers that use the claim and applies rule 1 now; returns rule 2, to be checked against the
     * prepared claims under {@link PreparedClaims}' lock.
     *
     * @param rc   the ResourceClaim as read from the API server
     * @param plan the claim as planned (its placement says whether it is exclusive)
     * @throws PreparedClaims.RefusedException naming the pods and containers, or the API error that kept them unread
     */
    PreparedClaims.Admission admission(ResourceClaim rc, PreparedClaim plan) throws PreparedClaims.RefusedException {
        List<User> users = users(rc);
        if (backend == SharingBackend.HAMI_CORE && !plan.placement().claim().exclusive() && users.size() > 1) {
            throw new PreparedClaims.RefusedException("is a shared GPU slice under --sharing hami-core and is used by " + users.size()
                    + " containers: " + byPod(users) + "; HAMi-core keeps one cache file per claim and keys the processes in it "
                    + "by their PID, which starts at 1 in every container, so the containers would overwrite each other's "
                    + "accounting and the claim's limit would not hold: use one claim per container (a ResourceClaimTemplate in "
                    + "each container's own pod.spec.resourceClaims entry, not one claim named by several containers or pods), "
                    + "or an exclusive GPU (a claim without capacity requests)");
        }
        List<Sibling> siblings = siblings(rc, users);
        if (siblings.isEmpty()) {
            return PreparedClaims.Admission.ANY;
        }
        return prepared -> {
            List<String> conflicts = new ArrayList<>();
            for (Sibling s : siblings) {
                if (prepared.containsKey(s.uid())) {
                    conflicts.add(s.user().describe() + " also uses claim " + s.key() + " (uid " + s.uid() + ") of driver "
                            + DraNames.DRIVER + ", prepared on this node before this one");
                }
            }
            if (!conflicts.isEmpty()) {
                throw new PreparedClaims.RefusedException(String.join("; ", conflicts) + ": one claim of driver " + DraNames.DRIVER
                        + " per container (the CDI specs of two claims each set NVIDIA_VISIBLE_DEVICES, the QGPU_* variables and "
                        + "the sharing back end's limits and mounts, and the later replaces the earlier: one GPU would go "
                        + "unlimited or be limited by the other claim); ask for all of the container's GPUs in one claim "
                        + "(one request with a count, or requests of the same capacity)");
            }
        };
    }

    /** The containers that use the claim, pod by pod in {@code status.reservedFor} order, init containers first. */
    List<User> users(ResourceClaim rc) throws PreparedClaims.RefusedException {
        String ns = rc.getMetadata().getNamespace();
        String name = rc.getMetadata().getName();
        List<ResourceClaimConsumerReference> consumers = rc.getStatus() == null || rc.getStatus().getReservedFor() == null
                ? List.of() : rc.getStatus().getReservedFor();
        List<User> out = new ArrayList<>();
        Set<String> podUids = new LinkedHashSet<>();
        for (int i = 0; i < consumers.size(); i++) {
            ResourceClaimConsumerReference c = consumers.get(i);
            String at = "status.reservedFor[" + i + "] = pod " + ns + "/" + c.getName() + " (uid " + c.getUid() + ")";
            if (!"pods".equals(c.getResource()) || !(c.getApiGroup() == null || c.getApiGroup().isEmpty())) {
                continue;
            }
            Pod pod;
            try {
                pod = client.pods().inNamespace(ns).withName(c.getName()).get();
            } catch (KubernetesClientException e) {
                throw new PreparedClaims.RefusedException(at + " cannot be read from the API server (" + apiError(e)
                        + "): the claim is not prepared without knowing which containers use it; the kubelet retries");
            }
            if (pod == null || !Objects.equals(c.getUid(), pod.getMetadata().getUid())) {
                LOG.debug("claim {}/{}: {} is {}: skipped", ns, name, at, pod == null ? "gone" : "another pod now");
                continue;
            }
            if (!podUids.add(pod.getMetadata().getUid())) {
                continue;
            }
            Map<String, String> claimOf = claimNames(pod);
            List<Container> init = pod.getSpec().getInitContainers() == null ? List.of() : pod.getSpec().getInitContainers();
            List<Container> main = pod.getSpec().getContainers() == null ? List.of() : pod.getSpec().getContainers();
            for (int k = 0; k < init.size() + main.size(); k++) {
                boolean isInit = k < init.size();
                Container ct = isInit ? init.get(k) : main.get(k - init.size());
                List<String> used = usedClaims(ct, claimOf);
                if (used.contains(name)) {
                    out.add(new User(ns, pod.getMetadata().getName(), ct.getName(), isInit,
                            used.stream().filter(n -> !n.equals(name)).toList()));
                }
            }
        }
        return out;
    }

    /** The pod's {@code spec.resourceClaims} entries by name, each to the ResourceClaim it resolves to (if it does yet). */
    private static Map<String, String> claimNames(Pod pod) {
        Map<String, String> generated = new HashMap<>();
        if (pod.getStatus() != null && pod.getStatus().getResourceClaimStatuses() != null) {
            for (PodResourceClaimStatus s : pod.getStatus().getResourceClaimStatuses()) {
                if (s.getName() != null && s.getResourceClaimName() != null) {
                    generated.put(s.getName(), s.getResourceClaimName());
                }
            }
        }
        Map<String, String> out = new LinkedHashMap<>();
        for (PodResourceClaim e : pod.getSpec().getResourceClaims() == null ? List.<PodResourceClaim>of() : pod.getSpec().getResourceClaims()) {
            if (e.getResourceClaimName() != null) {
                out.put(e.getName(), e.getResourceClaimName());
            } else if (e.getResourceClaimTemplateName() != null && generated.containsKey(e.getName())) {
                out.put(e.getName(), generated.get(e.getName()));
            }
        }
        return out;
    }

    /** The ResourceClaims a container uses, by name, without repeats. */
    private static List<String> usedClaims(Container c, Map<String, String> claimOf) {
        if (c.getResources() == null || c.getResources().getClaims() == null) {
            return List.of();
        }
        Set<String> out = new LinkedHashSet<>();
        for (io.fabric8.kubernetes.api.model.ResourceClaim r : c.getResources().getClaims()) {
            Optional.ofNullable(claimOf.get(r.getName())).ifPresent(out::add);
        }
        return List.copyOf(out);
    }

    /** The other claims of this driver the containers use, each read once. */
    private List<Sibling> siblings(ResourceClaim rc, List<User> users) throws PreparedClaims.RefusedException {
        Map<String, Optional<String>> qgpuUid = new HashMap<>();   // claim name -> its uid if it is one of this driver's
        List<Sibling> out = new ArrayList<>();
        for (User u : users) {
            for (String other : u.otherClaims()) {
                if (!qgpuUid.containsKey(other)) {
                    qgpuUid.put(other, qgpuUid(u, other));
                }
                Optional<String> uid = qgpuUid.get(other);
                if (uid.isPresent() && !uid.get().equals(rc.getMetadata().getUid())) {
                    out.add(new Sibling(u.namespace() + "/" + other, uid.get(), u));
                }
            }
        }
        return out;
    }

    /** The uid of the container's other claim when its allocation has results of this driver; empty otherwise or if it is gone. */
    private Optional<String> qgpuUid(User u, String name) throws PreparedClaims.RefusedException {
        ResourceClaim other;
        try {
            other = client.resources(ResourceClaim.class).inNamespace(u.namespace()).withName(name).get();
        } catch (KubernetesClientException e) {
            throw new PreparedClaims.RefusedException("claim " + u.namespace() + "/" + name + ", used by " + u.describe()
                    + " beside this one, cannot be read from the API server (" + apiError(e)
                    + "): the claim is not prepared without knowing whether that one is of driver " + DraNames.DRIVER
                    + "; the kubelet retries");
        }
        AllocationResult a = other == null || other.getStatus() == null ? null : other.getStatus().getAllocation();
        if (a == null || a.getDevices() == null || a.getDevices().getResults() == null) {
            return Optional.empty();
        }
        for (DeviceRequestAllocationResult r : a.getDevices().getResults()) {
            if (DraNames.DRIVER.equals(r.getDriver())) {
                return Optional.of(other.getMetadata().getUid());
            }
        }
        return Optional.empty();
    }

    /** {@code pod default/a (container main, init container proxy), pod default/b (container main)}. */
    private static String byPod(List<User> users) {
        Map<String, List<String>> byPod = new LinkedHashMap<>();
        for (User u : users) {
            byPod.computeIfAbsent(u.namespace() + "/" + u.pod(), k -> new ArrayList<>()).add(u.kind());
        }
        return byPod.entrySet().stream().map(e -> "pod " + e.getKey() + " (" + String.join(", ", e.getValue()) + ")")
                .collect(Collectors.joining(", "));
    }

    /** The API server's answer in a few words: its HTTP code and message. */
    private static String apiError(KubernetesClientException e) {
        String message = e.getStatus() != null && e.getStatus().getMessage() != null ? e.getStatus().getMessage() : e.getMessage();
        return "HTTP " + e.getCode() + ": " + message;
    }
}
