package io.qgpu.core.placement;

import io.qgpu.api.Claim;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.NumaPolicy;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Selectors;
import org.jspecify.annotations.Nullable;

/** A claim flattened into the fields the hot loop reads, with its resolved policies. */
final class ClaimShape {
    final Claim claim;
    final int k;
    final boolean exclusive;
    final long memory;
    final int compute;
    /**
     * The least free guaranteed compute of the claim's class a GPU must have: the request, or 1 for a
     * zero request when the rules refuse zero-request tenants on fully booked GPUs.
     */
    final int minComputeFree;
    /** The rules refuse to leave a zero-request tenant on a fully booked GPU. */
    final boolean refuseZeroStarving;
    final boolean online;
    /** {@link NodeSummary#RES_ONLINE} or {@link NodeSummary#RES_OFFLINE}. */
    final byte classCode;
    final @Nullable String exclusion;
    final @Nullable String anti;
    final @Nullable String affinity;
    final boolean gpuSelectors;
    final boolean nodeSelectors;
    final PlacementPolicy nodePolicy;
    final PlacementPolicy gpuPolicy;
    final boolean nodeBinpack;
    final boolean gpuBinpack;
    /** {@code numa: required}. */
    final boolean numaRequired;
    /** The claim names must-include GPUs. */
    final boolean mustInclude;
    /** Host-only: no GPU ({@code k == 0}); only the node's labels, filters and host resources decide. */
    final boolean hostOnly;
    /** Host resources asked for: CPU millicores and host memory bytes (0 when none). */
    final long cpuMillis;
    final long hostMemory;
    /** A shared claim of 2 to 14 GPUs: the tier key ({@link RefusalTiers#tierCause}) may refuse a node. */
    final boolean tiered;
    /** A shared claim with GPUs: the level key of its {@link #level} ({@link RefusalTiers#levelCause}) may refuse a node. */
    final boolean levelled;
    /** The highest of {@link RefusalTiers#LEVELS} not above {@link #minComputeFree}, by position. */
    final int level;
    /** The claim's memory per GPU in MiB, {@link RefusalTiers#quantize}d. */
    final long memoryCode;

    ClaimShape(Claim claim, PlacementConfig config, GranularityRules rules) {
        this.claim = claim;
        this.k = claim.gpuCount();
        this.exclusive = claim.exclusive();
        this.memory = claim.memoryPerGpuBytes();
        this.compute = claim.computeRequest();
        this.refuseZeroStarving = !rules.admitZeroRequestOnBookedGpu();
        this.minComputeFree = compute == 0 && refuseZeroStarving ? 1 : compute;
        this.online = claim.priority() == PriorityClass.ONLINE;
        this.classCode = online ? NodeSummary.RES_ONLINE : NodeSummary.RES_OFFLINE;
        this.exclusion = claim.locality().exclusion().orElse(null);
        this.anti = claim.locality().antiAffinity().orElse(null);
        this.affinity = claim.locality().affinity().orElse(null);
        Selectors s = claim.selectors();
        this.gpuSelectors = !s.includeModels().isEmpty() || !s.excludeModels().isEmpty()
                || !s.includeUuids().isEmpty() || !s.excludeUuids().isEmpty();
        this.nodeSelectors = !s.nodeLabels().isEmpty();
        this.nodePolicy = config.nodePolicyFor(claim);
        this.gpuPolicy = config.gpuPolicyFor(claim);
        this.nodeBinpack = nodePolicy != PlacementPolicy.SPREAD;   // fragmentation ranks like binpack underneath
        this.gpuBinpack = gpuPolicy != PlacementPolicy.SPREAD;
        this.numaRequired = claim.numa() == NumaPolicy.REQUIRED && k > 1;
        this.mustInclude = s.mustIncludeCount() > 0;
        this.hostOnly = k == 0;
        this.cpuMillis = claim.host().cpuMillis();
        this.hostMemory = claim.host().memoryBytes();
        this.tiered = !exclusive && k >= 2 && k <= 14;
        this.levelled = !exclusive && k >= 1;
        int j = 0;
        while (j + 1 < RefusalTiers.LEVELS.length && RefusalTiers.LEVELS[j + 1] <= minComputeFree) {
            j++;
        }
        this.level = j;
        this.memoryCode = RefusalTiers.quantize(memory >>> 20);
    }
}
