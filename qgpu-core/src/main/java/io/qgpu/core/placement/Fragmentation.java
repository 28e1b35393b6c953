package io.qgpu.core.placement;

import io.qgpu.api.GpuState;
import io.qgpu.api.NodeState;
import io.qgpu.api.PriorityClass;
import org.jspecify.annotations.Nullable;

/**
 * How much of one node's free GPU capacity a {@link RequestMix} could not use, and how much a
 * placement would change it. Capacity is measured in compute percent: a free GPU holds 100.
 *
 * <h2>Formula</h2>
 * For a node with free compute {@code f(g)} on each healthy GPU {@code g} (100 minus the more booked
 * of the two classes' guaranteed compute; 0 when a tenant holds it whole) and free host CPU {@code C},
 * and a shape {@code m} asking {@code k} GPUs of {@code c} percent each and {@code cpu} millicores:
 * <pre>
 *   frag(n, m) = sum of f(g) over all g                 if m is host-only (k = 0: it uses no GPU capacity)
 *   frag(n, m) = sum of f(g) over all g                 if C &lt; cpu, or fewer than k GPUs of an allowed
 *                                                       model have f(g) &gt;= c (m cannot run here at all)
 *   frag(n, m) = sum of f(g) over g with f(g) &lt; c     otherwise (GPUs too full for m, or of a model m may
 *                or a model m may not use               not use)
 *   S(n)       = max(0, sum of f(g) - C / r)            the CPU balance term: r is the mix's CPU per percent
 *                                                       of GPU ({@link RequestMix#cpuPerGpuPercent}); the free
 *                                                       GPU compute the node's free CPU cannot feed at that ratio
 *   F(n)       = sum over m of p(m) * frag(n, m) + S(n) (the expected capacity the next requests cannot use)
 *   delta(n, S)= F(n after the claim takes S) - F(n)    (the growth a candidate set S causes)
 * </pre>
 * The per-shape sum follows Fragmentation Gradient Descent (Weng et al., "Beware of Fragmentation:
 * Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC 2023): the placement
 * that grows the expected fragmentation least is preferred. That measure looks one request ahead: a node
 * whose CPU fits the next request counts none of its GPUs as stranded, even when its CPU cannot feed the
 * GPUs it has free once several requests arrived. {@code S(n)} is qgpu's addition: it counts the GPU
 * compute a node's free CPU can no longer serve at the rate the mix asks CPU for it (host-only requests
 * included, since they compete for the same CPU), so CPU-heavy requests go where CPU is spare and leave
 * CPU beside free GPUs. It is 0 where CPU is not modelled ({@code C} unlimited), when the mix asks no GPU,
 * and for a measure made without it ({@code cpuBalance} false: the paper's measure).
 *
 * <h2>Cost</h2>
 * {@link #profile} is {@code O(T x G)} for {@code T} shapes and {@code G} GPUs; {@link Profile#delta}
 * is {@code O(T x k)} for a set of {@code k} GPUs.
 *
 * <p>Thread safety: stateless; a {@link Profile} is thread-safe: its values are fixed when made, and
 * the memo of one-GPU deltas it keeps belongs to the thread that made it (another thread replaces it
 * with its own and never reads or writes a memo it does not own).
 */
public final class Fragmentation {

    private Fragmentation() {
    }

    /** Free compute of one GPU as defined above; -1 for an unhealthy GPU (not capacity at all). */
    public static int freeCompute(GpuState g) {
        if (!g.device().healthy()) {
            return -1;
        }
        if (g.heldExclusively()) {
            return 0;
        }
        int booked = Math.max(g.guaranteed(PriorityClass.ONLINE), g.guaranteed(PriorityClass.OFFLINE));
        return Math.max(0, 100 - booked);
    }

    /**
     * {@code F(n)} of a node with the given free CPU (use {@link Long#MAX_VALUE} when CPU is not modelled),
     * with the CPU balance term.
     */
    public static double of(NodeState node, long cpuFree, RequestMix mix) {
        return profile(node, cpuFree, mix, true).fragmentation();
    }

    /**
     * The node's free capacity and per-shape state, from which {@link Profile#delta} is computed; with
     * {@code cpuBalance} the measure includes the CPU balance term {@code S(n)}, without it it is the paper's.
     */
    public static Profile profile(NodeState node, long cpuFree, RequestMix mix, boolean cpuBalance) {
        int gpus = node.gpus().size();
        int[] free = new int[gpus];
        String[] models = new String[gpus];
        for (int g = 0; g < gpus; g++) {
            GpuState s = node.gpu(g);
            free[g] = freeCompute(s);
            models[g] = s.device().model();
        }
        return new Profile(free, models, cpuFree, mix, cpuBalance);
    }

    /** A node's free capacity, seen by one mix. */
    public static final class Profile {
        private final int[] free;
        private final long cpuFree;
        private final RequestMix mix;
        private final boolean cpuBalance;
        private final long total;
        /** Per shape: GPUs of an allowed model with enough free compute. */
        private final int[] fitting;
        /** Per shape: free compute on GPUs it cannot use (too full, or of another model). */
        private final long[] unusable;
        /** Per shape: which GPUs are of a model it may use; null when it may use any. */
        private final boolean[][] allowed;
        private final double fragmentation;
        private final double stranded;
        /**
         * Per GPU position: its class, the same for GPUs of one model with the same free compute, which
         * therefore give the same {@link #delta} as a set of one GPU.
         */
        private final int[] gpuClass;
        private final int classes;
        /** The last one-GPU deltas by class, for the thread that made it; replaced, never shared. */
        private volatile @Nullable SingleMemo memo;

        /** One thread's one-GPU deltas for one (share, cpu), by GPU class; NaN where not computed yet. */
        private static final class SingleMemo {
            final Thread owner = Thread.currentThread();
            final int share;
            final long cpu;
            final double[] byClass;

            SingleMemo(int share, long cpu, int classes) {
                this.share = share;
                this.cpu = cpu;
                this.byClass = new double[classes];
                java.util.Arrays.fill(byClass, Double.NaN);
            }
        }

        Profile(int[] free, String[] models, long cpuFree, RequestMix mix, boolean cpuBalance) {
            this.free = free;
            this.cpuFree = cpuFree;
            this.mix = mix;
            this.cpuBalance = cpuBalance;
            long t = 0;
            for (int f : free) {
                t += Math.max(0, f);
            }
            this.total = t;
            int shapes = mix.size();
            fitting = new int[shapes];
            unusable = new long[shapes];
            allowed = new boolean[shapes][];
            double sum = 0;
            for (int m = 0; m < shapes; m++) {
                RequestShape shape = mix.shape(m);
                // a shape without model restriction may use every GPU with capacity: no array for it
                boolean[] ok = shape.models().isEmpty() ? null : new boolean[free.length];
                for (int g = 0; g < free.length; g++) {
                    boolean usable = ok == null || (ok[g] = shape.allows(models[g]));
                    if (free[g] <= 0) {
                        continue;
                    }
                    if (usable && free[g] >= shape.computePercent()) {
                        fitting[m]++;
                    } else {
                        unusable[m] += free[g];
                    }
                }
                allowed[m] = ok;
                sum += mix.probability(m) * frag(shape, fitting[m], unusable[m], cpuFree, total);
            }
            this.stranded = stranded(total, cpuFree);
            this.fragmentation = sum + stranded;
            gpuClass = new int[free.length];
            int k = 0;
            for (int g = 0; g < free.length; g++) {
                int c = k;
                for (int h = 0; h < g; h++) {
                    if (free[h] == free[g] && java.util.Objects.equals(models[h], models[g])) {
                        c = gpuClass[h];
                        break;
                    }
                }
                gpuClass[g] = c;
                if (c == k) {
                    k++;
                }
            }
            classes = k;
        }

        private static long frag(RequestShape shape, int fitting, long unusable, long cpu, long total) {
            if (shape.isHostOnly() || cpu < shape.cpuMillis() || fitting < shape.gpus()) {
                return total;
            }
            return unusable;
        }

        /** {@code S(n)}: 0 without the CPU balance term, where CPU is not modelled, or when the mix asks no GPU. */
        private double stranded(long totalFree, long cpu) {
            double r = mix.cpuPerGpuPercent();
            if (!cpuBalance || cpu == Long.MAX_VALUE || r <= 0) {
                return 0;
            }
            return Math.max(0, totalFree - cpu / r);
        }

        /** {@code F(n)}, the CPU balance term included when the profile was made with it. */
        public double fragmentation() {
            return fragmentation;
        }

        /** {@code S(n)}, the CPU balance term's part of {@link #fragmentation()} (0 when made without it). */
        public double cpuStranded() {
            return stranded;
        }

        /** Free compute of the node, in percent of one GPU (a free GPU holds 100). */
        public long freeTotal() {
            return total;
        }

        /**
         * {@code delta(n, S)}: the change of {@code F(n)} when each GPU at {@code positions} loses
         * {@code share} percent (100 for a whole GPU) and the node loses {@code cpu} millicores.
         */
        public double delta(int[] positions, int share, long cpu) {
            if (positions.length != 1) {
                return deltaOf(positions, share, cpu);
            }
            // one GPU: GPUs of one class give the same delta (the same inputs, the same arithmetic), so
            // each class is computed once per (share, cpu) and thread
            SingleMemo m = memo;
            if (m == null || m.owner != Thread.currentThread() || m.share != share || m.cpu != cpu) {
                m = new SingleMemo(share, cpu, classes);
                memo = m;
            }
            int c = gpuClass[positions[0]];
            double d = m.byClass[c];
            if (Double.isNaN(d)) {
                d = deltaOf(positions, share, cpu);
                m.byClass[c] = d;
            }
            return d;
        }

        private double deltaOf(int[] positions, int share, long cpu) {
            long totalAfter = total;
            for (int p : positions) {
                totalAfter -= Math.min(Math.max(0, free[p]), share);
            }
            long cpuAfter = cpuFree == Long.MAX_VALUE ? cpuFree : cpuFree - cpu;
            double after = 0;
            for (int m = 0; m < mix.size(); m++) {
                RequestShape shape = mix.shape(m);
                int c = shape.computePercent();
                int fit = fitting[m];
                long un = unusable[m];
                boolean[] ok = allowed[m];
                for (int p : positions) {
                    int before = free[p];
                    if (before <= 0) {
                        continue;
                    }
                    int now = Math.max(0, before - share);
                    boolean usable = ok == null || ok[p];
                    if (usable && before >= c) {
                        fit--;
                    } else {
                        un -= before;
                    }
                    if (now > 0) {
                        if (usable && now >= c) {
                            fit++;
                        } else {
                            un += now;
                        }
                    }
                }
                after += mix.probability(m) * frag(shape, fit, un, cpuAfter, totalAfter);
            }
            return after + stranded(totalAfter, cpuAfter) - fragmentation;
        }
    }
}
