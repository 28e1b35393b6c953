package io.qgpu.api;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * A group of claims placed all or nothing (the workers of one distributed training job): every
 * member is committed, or none is.
 *
 * <pre>{@code
 * Gang job = Gang.builder("train-7")
 *         .member(Claim.builder("train-7-0").gpus(4).exclusive().build())
 *         .member(Claim.builder("train-7-1").gpus(4).exclusive().build())
 *         .together(GangScope.sameLabel("topology.qgpu.io/nvlink-domain"))
 *         .build();
 * GangResult r = new GangPlacer(engine).place(job);     // io.qgpu.core.placement.GangPlacer
 * if (r instanceof GangResult.Placed p) {
 *     p.placements().forEach(this::start);
 * } else if (r instanceof GangResult.Unschedulable u) {
 *     log.info("{}", u.summary());
 * }
 * }</pre>
 *
 * @param name    the group's name (for messages)
 * @param members the claims, at least one, with distinct tenant ids
 * @param scope   where the members must be relative to each other
 *
 * <p>Thread safety: immutable.
 */
public record Gang(String name, List<Claim> members, GangScope scope) {

    public Gang {
        Validate.notBlank("gang.name", name);
        members = Validate.list("gang[" + name + "].members", members);
        Validate.notNull("gang[" + name + "].scope", scope);
        if (members.isEmpty()) {
            throw new InvalidValueException("gang[" + name + "].members", 0, "must name at least one claim");
        }
        Set<String> ids = new HashSet<>();
        for (Claim c : members) {
            if (!ids.add(c.tenantId())) {
                throw new InvalidValueException("gang[" + name + "].members.tenantId", c.tenantId(), "is used twice");
            }
        }
    }

    /** The most members {@link #replicas} makes. */
    public static final int MAX_REPLICAS = 1024;

    /**
     * {@code count} replicas of one single-GPU claim as one request: members {@code <tenantId>-0} to
     * {@code <tenantId>-<count-1>} (copies of {@code replica} under these ids), named after the claim's
     * tenant id, together on one node and spread over its GPUs ({@link GangScope#sameNodeSpread()}).
     *
     * <pre>{@code
     * Claim replica = Claim.builder("infer-7").memoryGiB(4).compute(0, 100).build();
     * Gang pod = Gang.replicas(replica, 4);                   // infer-7-0 .. infer-7-3
     * if (new GangPlacer(engine).place(pod) instanceof GangResult.Placed p) {
     *     p.placements().get(0).gpuUuids().get(0);          // the GPU of replica 0
     * }
     * }</pre>
     *
     * @throws InvalidValueException when {@code count} is not between 1 and {@value #MAX_REPLICAS}
     *         ({@code gang[<tenantId>].replicas}) or the claim does not ask for exactly one GPU
     *         ({@code gang[<tenantId>].replica.gpuCount})
     */
    public static Gang replicas(Claim replica, int count) {
        Validate.notNull("gang.replica", replica);
        String name = replica.tenantId();
        Validate.between("gang[" + name + "].replicas", count, 1, MAX_REPLICAS);
        if (replica.gpuCount() != 1) {
            throw new InvalidValueException("gang[" + name + "].replica.gpuCount", replica.gpuCount(),
                    "a replica is one GPU's slice: must be 1");
        }
        Builder b = builder(name).together(GangScope.sameNodeSpread());
        for (int i = 0; i < count; i++) {
            b.member(replica.toBuilder().tenantId(name + "-" + i).build());
        }
        return b.build();
    }

    /** The members' tenant ids, in member order. */
    public List<String> tenantIds() {
        return members.stream().map(Claim::tenantId).toList();
    }

    public static Builder builder(String name) {
        return new Builder(name);
    }

    /** Fail-fast builder; the scope defaults to {@link GangScope#anywhere()}. */
    public static final class Builder {
        private final String name;
        private final List<Claim> members = new ArrayList<>();
        private GangScope scope = GangScope.anywhere();

        private Builder(String name) {
            this.name = Validate.notBlank("gang.name", name);
        }

        public Builder member(Claim c) {
            members.add(Validate.notNull("gang[" + name + "].member", c));
            return this;
        }

        public Builder members(List<Claim> cs) {
            Validate.list("gang[" + name + "].members", cs).forEach(this::member);
            return this;
        }

        public Builder together(GangScope s) {
            this.scope = Validate.notNull("gang[" + name + "].scope", s);
            return this;
        }

        public Gang build() {
            return new Gang(name, members, scope);
        }
    }
}
