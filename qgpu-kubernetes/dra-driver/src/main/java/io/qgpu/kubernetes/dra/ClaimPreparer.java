package io.qgpu.kubernetes.dra;

import io.fabric8.kubernetes.api.model.resource.v1.AllocationResult;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceRequestAllocationResult;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.qgpu.api.Claim;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Placement;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.QgpuException;
import io.qgpu.api.Slice;
import io.qgpu.kubernetes.node.dra.DraNames;
import io.qgpu.kubernetes.node.dra.GpuConfigs;
import io.qgpu.kubernetes.node.dra.PublishedCapacity;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * NodePrepareResources and NodeUnprepareResources without the wire: for each claim the kubelet names, reads
 * the ResourceClaim from the API server, checks it, turns this driver's allocation results in this node's
 * pool into one qgpu placement, and has {@link PreparedClaims} reserve and record it. Every claim gets its
 * own answer: a claim that fails gets an error and the others are prepared all the same.
 *
 * <p>The placement: tenant id = the claim's uid; one slice per allocated GPU. A result without
 * {@code consumedCapacity}, or one that consumes the device's whole published capacity ({@link PublishedCapacity}:
 * the memory rounded down to the rules' unit, or NVML's, and 100 cores), is the whole GPU (an exclusive claim);
 * otherwise memory and cores are the consumed {@code memory} and {@code cores} (compute request = cores). A
 * consumption off the rules' grid is refused with the reason, never rounded; {@code tenants}, where consumed, must
 * be 1. qgpu gives a claim one and the same slice on each of its GPUs, so the results of one claim must consume
 * the same, on distinct GPUs.
 *
 * <p>The claim's {@link GpuConfigs GpuConfig} (the allocation's opaque configuration for this driver) sets the
 * placement's priority (default {@code offline}) and compute limit (default: the cores; at least the cores, at
 * most 100, on the rules' compute grid; only 100 for a whole GPU); every result of the claim must get the same.
 * A configuration that is not valid refuses the claim, naming the field and the value.
 *
 * <p>Thread safety: thread-safe (API reads run in parallel; {@link PreparedClaims} serialises the rest).
 */
final class ClaimPreparer {
    private static final Logger LOG = LoggerFactory.getLogger(ClaimPreparer.class);

    /** A claim as the kubelet names it. */
    record ClaimRef(String namespace, String name, String uid) {
        String key() {
            return namespace + "/" + name;
        }
    }

    /** One claim's answer: its devices, or an error. */
    sealed interface Outcome {
        record Prepared(PreparedClaim claim) implements Outcome {
        }

        record Failed(String error) implements Outcome {
        }
    }

    private final KubernetesClient client;
    private final String node;
    private final NodeGpus gpus;
    private final PreparedClaims claims;
    private final GranularityRules rules;
    private final ClaimContainers containers;

    ClaimPreparer(KubernetesClient client, String node, NodeGpus gpus, PreparedClaims claims, GranularityRules rules) {
        this.client = client;
        this.rules = rules;
        this.node = node;
        this.gpus = gpus;
        this.claims = claims;
        this.containers = new ClaimContainers(client, claims.sharingBackend());
    }

    /** Prepares each claim; one answer per distinct uid, in request order. */
    Map<String, Outcome> prepare(List<ClaimRef> refs) {
        Map<String, Outcome> out = new LinkedHashMap<>();
        for (ClaimRef ref : refs) {
            if (!out.containsKey(ref.uid())) {
                out.put(ref.uid(), prepareOne(ref));
            }
        }
        return out;
    }

    /** Unprepares each claim; an unknown one is a success. One answer (empty: success) per uid. */
    Map<String, String> unprepare(List<ClaimRef> refs) {
        Map<String, String> out = new LinkedHashMap<>();
        for (ClaimRef ref : refs) {
            try {
                boolean was = claims.unprepare(ref.uid());
                LOG.info("claim {} ({}) {}", ref.key(), ref.uid(), was ? "unprepared" : "was not prepared: nothing to do");
                out.put(ref.uid(), "");
            } catch (RuntimeException e) {
                LOG.error("claim {} ({}) could not be unprepared", ref.key(), ref.uid(), e);
                out.put(ref.uid(), "claim " + ref.key() + ": " + e.getMessage());
            }
        }
        return out;
    }

    private Outcome prepareOne(ClaimRef ref) {
        String what = "claim " + ref.key() + " (uid " + ref.uid() + ")";
        Optional<PreparedClaim> done = claims.get(ref.uid());
        if (done.isPresent()) {
            return new Outcome.Prepared(done.get());
        }
        try {
            ResourceClaim rc = client.resources(ResourceClaim.class).inNamespace(ref.namespace()).withName(ref.name()).get();
            PreparedClaim plan = plan(ref, rc);
            // the containers that use the claim may refuse it (issue 38 item 3: ClaimContainers), from the same read
            PreparedClaim prepared = claims.prepare(plan, containers.admission(rc, plan));
            LOG.info("{} prepared: {}", what, prepared.placement().environment());
            return new Outcome.Prepared(prepared);
        } catch (PreparedClaims.RefusedException | IllegalArgumentException | QgpuException e) {
            LOG.info("{} refused: {}", what, e.getMessage());
            return new Outcome.Failed(what + ": " + e.getMessage());
        } catch (KubernetesClientException e) {
            LOG.warn("{}: the API server failed: {}", what, e.getMessage());
            return new Outcome.Failed(what + ": cannot be read from the API server: " + e.getMessage());
        } catch (Exception e) {
            LOG.error("{} could not be prepared (nothing of it is kept)", what, e);
            return new Outcome.Failed(what + ": " + e.getMessage());
        }
    }

    /**
     * The compute limit: the GpuConfig's, else the consumed cores. A whole-GPU claim has only 100; a share's
     * limit is at least its cores, at most 100, and on the rules' compute grid.
     */
    private int computeLimit(GpuConfigs.Effective config, boolean whole, int cores) {
        if (config.computeLimit().isEmpty()) {
            return cores;
        }
        GpuConfigs.Setting<Integer> set = config.computeLimit().get();
        int v = set.value();
        if (whole && v != PublishedCapacity.ALL_CORES) {
            throw new IllegalArgumentException(set.at() + " = " + v + ": a whole-GPU claim has compute limit 100");
        }
        if (v < cores || v > PublishedCapacity.ALL_CORES) {
            throw new IllegalArgumentException(set.at() + " = " + v + ": must be at least the consumed cores (" + cores
                    + ") and at most 100");
        }
        if (v % rules.computeUnit() != 0) {
            throw new IllegalArgumentException(set.at() + " = " + v + ": must be a multiple of " + rules.computeUnit()
                    + " under the " + rules.name() + " rules");
        }
        return v;
    }

    /** The claim's placement and devices, or IllegalArgumentException saying what is wrong with it. */
    private PreparedClaim plan(ClaimRef ref, ResourceClaim rc) {
        if (rc == null) {
            throw new IllegalArgumentException("no such ResourceClaim");
        }
        String uid = rc.getMetadata().getUid();
        if (!ref.uid().equals(uid)) {
            throw new IllegalArgumentException("the ResourceClaim has uid " + uid + ", not the kubelet's " + ref.uid()
                    + " (it was deleted and created again)");
        }
        AllocationResult allocation = rc.getStatus() == null ? null : rc.getStatus().getAllocation();
        if (allocation == null || allocation.getDevices() == null) {
            throw new IllegalArgumentException("is not allocated (status.allocation is empty)");
        }
        List<DeviceRequestAllocationResult> results = allocation.getDevices().getResults();
        GpuConfigs configs = GpuConfigs.of(allocation.getDevices().getConfig());
        List<PreparedClaim.Device> devices = new ArrayList<>();
        List<NodeGpus.Gpu> onGpus = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        Optional<Capacities.Consumed> shape = Optional.empty();
        GpuConfigs.Effective config = GpuConfigs.Effective.NONE;
        for (int i = 0; i < (results == null ? 0 : results.size()); i++) {
            DeviceRequestAllocationResult r = results.get(i);
            if (!DraNames.DRIVER.equals(r.getDriver())) {
                continue;
            }
            String at = "status.allocation.devices.results[" + i + "]";
            if (!node.equals(r.getPool())) {
                throw new IllegalArgumentException(at + ".pool = " + r.getPool() + ": allocated to another node's pool (this is "
                        + node + ")");
            }
            NodeGpus.Gpu gpu = gpus.byName(r.getDevice()).orElseThrow(() -> new IllegalArgumentException(at + ".device = "
                    + r.getDevice() + ": this node never published such a device"));
            if (!seen.add(gpu.name())) {
                throw new IllegalArgumentException(at + ".device = " + r.getDevice()
                        + ": a second share of one GPU in one claim (qgpu gives a claim one slice per GPU)");
            }
            PublishedCapacity published = gpu.published(rules);
            Optional<Capacities.Consumed> c = Capacities.of(at + ".consumedCapacity", r.getConsumedCapacity())
                    .filter(x -> !published.isWhole(x.memoryBytes(), x.cores()));
            if (c.isPresent()) {
                String off = published.offGrid(c.get().memoryBytes(), c.get().cores(), rules);
                if (off != null) {
                    throw new IllegalArgumentException(at + ".consumedCapacity = " + r.getConsumedCapacity() + ": " + off);
                }
            }
            if (!devices.isEmpty() && !shape.equals(c)) {
                throw new IllegalArgumentException(at + ".consumedCapacity = " + r.getConsumedCapacity()
                        + ": differs from the claim's first result (qgpu gives a claim the same slice on each GPU)");
            }
            GpuConfigs.Effective e = configs.forRequest(r.getRequest());
            if (!devices.isEmpty() && !e.sameValues(config)) {
                throw new IllegalArgumentException(at + ".request = " + r.getRequest() + ": its " + GpuConfigs.KIND + " ("
                        + e.describe() + ") differs from the claim's first result's (" + config.describe()
                        + "); qgpu gives a claim one priority and one compute limit");
            }
            shape = c;
            config = e;
            onGpus.add(gpu);
            devices.add(new PreparedClaim.Device(List.of(r.getRequest()), r.getPool(), r.getDevice(),
                    Optional.ofNullable(r.getShareID()), gpu.uuid(), List.of()));
        }
        if (devices.isEmpty()) {
            throw new IllegalArgumentException("has no device of driver " + DraNames.DRIVER + " in its allocation");
        }
        int cores = shape.map(Capacities.Consumed::cores).orElse(PublishedCapacity.ALL_CORES);
        int limit = computeLimit(config, shape.isEmpty(), cores);
        Claim.Builder b = Claim.builder(uid).gpus(devices.size())
                .priority(config.priority().map(GpuConfigs.Setting::value).orElse(PriorityClass.OFFLINE));
        if (shape.isEmpty()) {
            b.exclusive();
        } else {
            b.memoryBytes(shape.get().memoryBytes()).compute(cores, limit);
        }
        Claim claim = b.build();
        try {
            rules.validate(claim);
        } catch (QgpuException e) {
            throw new IllegalArgumentException("consumedCapacity " + results.get(0).getConsumedCapacity()
                    + " is refused by qgpu's granularity rules, never rounded: " + e.getMessage());
        }
        Optional<Capacities.Consumed> share = shape;
        List<Slice> slices = onGpus.stream().map(g -> share.map(x -> new Slice(g.uuid(), x.memoryBytes(), cores, limit))
                .orElseGet(() -> new Slice(g.uuid(), g.device().memoryBytes(), 100, 100))).toList();
        return new PreparedClaim(uid, ref.namespace(), ref.name(), new Placement(claim, node, slices), devices);
    }
}
