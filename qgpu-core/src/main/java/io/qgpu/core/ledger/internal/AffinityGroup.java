package io.qgpu.core.ledger.internal;

import io.qgpu.api.Placement;
import java.util.Set;

/** The GPUs the tenants with one affinity label share, and how many they are. Immutable. */
record AffinityGroup(String node, Set<String> gpus, int members) {

    static AffinityGroup of(Placement p) {
        return new AffinityGroup(p.nodeName(), Set.copyOf(p.gpuUuids()), 1);
    }

    boolean matches(Placement p) {
        return node.equals(p.nodeName()) && gpus.equals(Set.copyOf(p.gpuUuids()));
    }

    AffinityGroup plus(int delta) {
        return new AffinityGroup(node, gpus, members + delta);
    }

    /** The group after one member left, or {@code null} when it was the last. */
    AffinityGroup minusOne() {
        return members <= 1 ? null : plus(-1);
    }
}
