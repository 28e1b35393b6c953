package io.qgpu.core.placement;

import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.placement.GpuFilter;
import io.qgpu.api.placement.NodeFilter;
import io.qgpu.core.ledger.AdmissionRules;
import io.qgpu.core.ledger.Ledger;
import java.util.List;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * Whether one node can take a claim, and if not, one reason why, decided from the node's
 * {@link NodeSummary}: the single source of the engine's per-node feasibility (the placement pass,
 * the refusal scan and {@link PlacementEngine#check} all ask here). Checks, in order, each stopping
 * at the first that refuses:
 * <ol>
 *   <li>the summary's capacity aggregates ({@link NodeSummary#precheckCause}: free whole GPUs, open
 *       GPUs, largest free memory, largest free compute, free tenant slots, then free CPU and host
 *       memory), no GPU visited;</li>
 *   <li>the node selector ({@code NODE_LABELS_MISMATCH});</li>
 *   <li>each GPU's admission and the GPU filters: fewer than {@code k} admit the claim; the reason's
 *       code is the most frequent first failure among the refused GPUs (ties: enum order);</li>
 *   <li>the set constraints (must-include GPUs, {@code numa: required});</li>
 *   <li>the registered node filters.</li>
 * </ol>
 * This is exactly {@code PlacementEngine}'s feasibility rule; the full per-GPU detail of a refused
 * node is {@link Refusals#rejection}.
 *
 * <p>Thread safety: immutable after construction (registered filters must be thread-safe).
 */
@SuppressWarnings("EnumOrdinal") // per-code tables (BARE, counts) are arrays indexed by ReasonCode ordinal, no boxing
final class NodeVerdicts {
    private static final ReasonCode[] CODES = ReasonCode.values();
    /** One reason per code without words or target, for callers that only need the code. */
    private static final Reason[] BARE = new Reason[CODES.length];
    /** Each code's name in the words of a reason (lower case, spaces): made once, not per refused node. */
    private static final String[] WORDS_OF = new String[CODES.length];

    static {
        for (ReasonCode code : CODES) {
            BARE[code.ordinal()] = Reason.of(code, "", "");
            WORDS_OF[code.ordinal()] = code.name().toLowerCase(Locale.ROOT).replace('_', ' ');
        }
    }

    private final Ledger ledger;
    private final NodeFilter[] nodeFilters;
    private final GpuFilter[] gpuFilters;

    NodeVerdicts(Ledger ledger, NodeFilter[] nodeFilters, GpuFilter[] gpuFilters) {
        this.ledger = ledger;
        this.nodeFilters = nodeFilters;
        this.gpuFilters = gpuFilters;
    }

    /** Verdict detail: whether only, the code, or the reason in words. */
    private static final int WHETHER = 0;
    private static final int CODE = 1;
    private static final int WORDS = 2;

    /** Whether the node can take the claim (the placement pass's feasibility rule). */
    boolean feasible(NodeSummary s, ClaimShape c) {
        return verdict(s, c, WHETHER) == null;
    }

    /** Null when the node can take the claim, else the code of its reason. Allocates little on the way. */
    @Nullable ReasonCode cause(NodeSummary s, ClaimShape c) {
        Reason r = verdict(s, c, CODE);
        return r == null ? null : r.code();
    }

    /** Null when the node can take the claim, else one reason, with quantities where the summary has them. */
    @Nullable Reason reason(NodeSummary s, ClaimShape c) {
        return verdict(s, c, WORDS);
    }

    private @Nullable Reason verdict(NodeSummary s, ClaimShape c, int detail) {
        Reason before = beforeGpus(s, c, detail == WORDS);
        if (before != null) {
            return before;
        }
        int count = 0;
        for (int g = 0; g < s.size && count < c.k; g++) {
            if (candidate(s, g, c)) {
                count++;
            }
        }
        return fromGpus(s, c, detail, count);
    }

    /**
     * {@link #reason} in two steps around a visit of the GPUs that the caller makes itself (the check of
     * one node for a single-GPU claim takes the admissible GPUs' mask, {@link #candidateMask}, for its set
     * search too): this first, then, when it finds nothing, {@link #reasonFromGpus} with how many GPUs
     * admit the claim. Null when the node passes these checks, else the reason.
     */
    @Nullable Reason reasonBeforeGpus(NodeSummary s, ClaimShape c) {
        return beforeGpus(s, c, true);
    }

    /** {@link #reason} after {@link #reasonBeforeGpus} found nothing, {@code admissible} GPUs admitting the claim. */
    @Nullable Reason reasonFromGpus(NodeSummary s, ClaimShape c, int admissible) {
        return fromGpus(s, c, WORDS, admissible);
    }

    /** The checks before the GPUs: the summary's aggregates, then the node selector. */
    private @Nullable Reason beforeGpus(NodeSummary s, ClaimShape c, boolean words) {
        ReasonCode code = s.precheckCause(c);
        if (code != null) {
            return words ? precheckReason(s, code, c) : BARE[code.ordinal()];
        }
        if (c.nodeSelectors && !c.claim.selectors().matchesNode(s.state.node())) {
            return words ? AdmissionRules.checkNode(s.state.node(), c.claim).get(0) : BARE[ReasonCode.NODE_LABELS_MISMATCH.ordinal()];
        }
        return null;
    }

    /**
     * The checks from the GPUs on, {@code count} GPUs admitting the claim (counted up to {@code k} or
     * beyond): too few of them, then the set constraints, then the registered node filters.
     */
    private @Nullable Reason fromGpus(NodeSummary s, ClaimShape c, int detail, int count) {
        boolean words = detail == WORDS;
        if (count < c.k) {
            return detail == WHETHER ? BARE[ReasonCode.NOT_ENOUGH_GPUS.ordinal()] : gpuShortfall(s, c, words);
        }
        if (c.mustInclude || c.numaRequired) {
            List<Reason> shortfall = setConstraintShortfall(s, c);
            if (shortfall != null) {
                return shortfall.get(0);
            }
        }
        for (NodeFilter f : nodeFilters) {
            List<Reason> rs = f.check(c.claim, s.state, ledger);
            if (!rs.isEmpty()) {
                return rs.get(0);
            }
        }
        return null;
    }

    /** Fewer than {@code k} GPUs admit the claim: the most frequent first failure of the others. */
    private Reason gpuShortfall(NodeSummary s, ClaimShape c, boolean words) {
        int[] counts = new int[CODES.length];
        int usable = 0;
        for (int g = 0; g < s.size; g++) {
            ReasonCode f = s.failure(g, c);
            if (f == null) {
                f = gpuFilterCode(s, g, c);
            }
            if (f == null) {
                usable++;
            } else {
                counts[f.ordinal()]++;
            }
        }
        int best = 0;
        for (int i = 1; i < counts.length; i++) {
            if (counts[i] > counts[best]) {
                best = i;
            }
        }
        if (counts[best] == 0) {
            best = ReasonCode.NOT_ENOUGH_GPUS.ordinal();   // a node without GPUs
        }
        if (!words) {
            return BARE[best];
        }
        StringBuilder sb = new StringBuilder().append(c.k).append(" GPU(s) needed, ").append(usable).append(" usable; refused:");
        String sep = " ";
        for (int i = 0; i < counts.length; i++) {
            if (counts[i] > 0) {
                sb.append(sep).append(counts[i]).append(' ').append(WORDS_OF[i]);
                sep = ", ";
            }
        }
        return Reason.of(CODES[best], s.state.name(), sb.toString());
    }

    /** The reason of {@link NodeSummary#precheckCause}, with what the claim asks and the most the node has. */
    private static Reason precheckReason(NodeSummary s, ReasonCode code, ClaimShape c) {
        boolean on = c.online;
        String node = s.state.name();
        String cls = c.claim.priority().wireName();
        return switch (code) {
            case EXCLUSIVE -> Reason.of(code, node, c.k + " free whole GPU(s) needed, "
                    + (on ? s.emptyOnline : s.emptyOffline) + " empty and open to " + cls + " claims");
            case NOT_ENOUGH_GPUS -> new Reason(code, node, c.k, on ? s.openOnline : s.openOffline,
                    "healthy GPUs open to " + cls + " claims");
            case INSUFFICIENT_MEMORY -> (on ? s.maxMemOnline : s.maxMemOffline) < c.memory
                    ? new Reason(code, node, c.memory, Math.max(0, on ? s.maxMemOnline : s.maxMemOffline),
                            "largest free on one GPU with a free tenant slot")
                    : tierReason(s, code, c);
            case INSUFFICIENT_COMPUTE -> (on ? s.maxComputeOnline : s.maxComputeOffline) < c.minComputeFree
                    ? new Reason(code, node, c.minComputeFree, Math.max(0, on ? s.maxComputeOnline : s.maxComputeOffline),
                            "largest free " + cls + " guaranteed compute on one GPU with a free tenant slot")
                    : tierReason(s, code, c);
            case TOO_MANY_TENANTS -> Reason.of(code, node, c.k + " GPU(s) with a free tenant slot needed, "
                    + (on ? s.slotsOnline : s.slotsOffline) + " have one");
            case INSUFFICIENT_CPU -> new Reason(code, node, c.cpuMillis, s.cpuFree, "CPU on the node");
            case INSUFFICIENT_HOST_MEMORY -> new Reason(code, node, c.hostMemory, s.hostMemFree, "host memory on the node");
            default -> throw new IllegalArgumentException("not a summary cause: " + code);
        };
    }

    /**
     * The reason of a refusal by the refusal tiers or levels ({@link RefusalTiers}), with the exact
     * value behind it: the tier's when the tier refuses, else the level's.
     */
    private static Reason tierReason(NodeSummary s, ReasonCode code, ClaimShape c) {
        String node = s.state.name();
        String cls = c.claim.priority().wireName();
        RefusalTiers r = s.tiers(c.online);
        boolean memory = code == ReasonCode.INSUFFICIENT_MEMORY;
        int t = RefusalTiers.tier(c.k);
        if (c.tiered) {
            long tierMem = t == 8 ? r.mem8 : r.mem4;
            int tierCpt = t == 8 ? r.cpt8 : t == 4 ? r.cpt4 : r.cpt2;
            if (memory && t >= 4 && tierMem < c.memory) {
                return new Reason(code, node, c.memory, Math.max(0, tierMem), RefusalTiers.tierWords(c.k, "free"));
            }
            if (!memory && tierCpt < c.minComputeFree) {
                return new Reason(code, node, c.minComputeFree, Math.max(0, tierCpt),
                        RefusalTiers.tierWords(c.k, "free " + cls + " guaranteed compute"));
            }
        }
        int level = RefusalTiers.LEVELS[c.level];
        int m = Math.min(c.k, 8);
        return memory
                ? new Reason(code, node, c.memory, Math.max(0, r.largest(m, level, false)), RefusalTiers.levelWords(c, true))
                : new Reason(code, node, c.minComputeFree, Math.max(0, r.largest(m, -1, true)), RefusalTiers.levelWords(c, false));
    }

    boolean gpuFiltersAccept(NodeSummary s, int g, ClaimShape c) {
        return gpuFilters.length == 0 || gpuFilterCode(s, g, c) == null;
    }

    private @Nullable ReasonCode gpuFilterCode(NodeSummary s, int g, ClaimShape c) {
        for (GpuFilter f : gpuFilters) {
            List<Reason> rs = f.check(c.claim, s.state, s.state.gpu(g), ledger);
            if (!rs.isEmpty()) {
                return rs.get(0).code();
            }
        }
        return null;
    }

    /** Writes the admissible positions of {@code s} into {@code out} (ascending) and returns how many. */
    int candidates(NodeSummary s, ClaimShape c, int[] out) {
        int m = 0;
        for (int g = 0; g < s.size; g++) {
            if (candidate(s, g, c)) {
                out[m++] = g;
            }
        }
        return m;
    }

    /** Whether GPU {@code g} of the node may hold the claim: admitted, and every registered GPU filter accepts it. */
    private boolean candidate(NodeSummary s, int g, ClaimShape c) {
        return s.admits(g, c) && gpuFiltersAccept(s, g, c);
    }

    /** The positions {@link #candidates} writes, as a bit mask (a node of at most 64 GPUs). */
    long candidateMask(NodeSummary s, ClaimShape c) {
        long mask = 0;
        for (int g = 0; g < s.size; g++) {
            if (candidate(s, g, c)) {
                mask |= 1L << g;
            }
        }
        return mask;
    }

    /** Null when must-include GPUs and {@code numa: required} can be met on the node, else the reasons why not. */
    @Nullable List<Reason> setConstraintShortfall(NodeSummary s, ClaimShape c) {
        int[] cand = new int[s.size];
        int m = candidates(s, c, cand);
        return SetConstraints.shortfall(s, c, cand, m);
    }
}
