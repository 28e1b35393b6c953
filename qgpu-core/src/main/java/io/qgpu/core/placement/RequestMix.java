package io.qgpu.core.placement;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Validate;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A distribution of request shapes: what the fragmentation term expects to arrive next. Each
 * shape has a probability; the probabilities add up to 1 (or the mix is empty, and the
 * fragmentation term is then 0 everywhere).
 *
 * <pre>{@code
 * RequestMix mix = RequestMix.of(Map.of(
 *         new RequestShape(1, 50, 0, Set.of()), 3.0,     // weights, normalised by of()
 *         new RequestShape(1, 100, 0, Set.of()), 1.0));
 * mix.probability(0);   // 0.75: shapes are kept in decreasing weight
 * RequestMix common = mix.top(0.95);   // the most frequent shapes covering 95% of the weight
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public final class RequestMix {
    private static final RequestMix EMPTY = new RequestMix(List.of(), new double[0]);

    private final List<RequestShape> shapes;
    private final double[] probabilities;
    private final double cpuPerGpuPercent;

    private RequestMix(List<RequestShape> shapes, double[] probabilities) {
        this.shapes = shapes;
        this.probabilities = probabilities;
        double cpu = 0;
        double gpu = 0;
        for (int m = 0; m < probabilities.length; m++) {
            RequestShape s = shapes.get(m);
            cpu += probabilities[m] * s.cpuMillis();
            if (!s.isHostOnly()) {
                gpu += probabilities[m] * s.gpus() * s.computePercent();
            }
        }
        this.cpuPerGpuPercent = gpu > 0 ? cpu / gpu : 0;
    }

    /** The empty mix: no expectation, fragmentation 0 everywhere. */
    public static RequestMix empty() {
        return EMPTY;
    }

    /**
     * A mix from weights (counts or probabilities, each finite and {@code > 0}), normalised to add up to 1 and
     * kept in decreasing weight (ties in the map's iteration order).
     */
    public static RequestMix of(Map<RequestShape, Double> weights) {
        Validate.notNull("requestMix.weights", weights);
        List<Map.Entry<RequestShape, Double>> entries = new ArrayList<>(weights.size());
        double total = 0;
        for (Map.Entry<RequestShape, Double> e : weights.entrySet()) {
            Validate.notNull("requestMix.weights key", e.getKey());
            Double w = e.getValue();
            if (w == null || !(w > 0) || Double.isInfinite(w)) {
                throw new InvalidValueException("requestMix.weights[" + e.getKey() + "]", w, "a weight must be a finite number > 0");
            }
            entries.add(e);
            total += w;
        }
        if (entries.isEmpty()) {
            return EMPTY;
        }
        entries.sort((a, b) -> Double.compare(b.getValue(), a.getValue()));
        List<RequestShape> shapes = new ArrayList<>(entries.size());
        double[] p = new double[entries.size()];
        for (int i = 0; i < entries.size(); i++) {
            shapes.add(entries.get(i).getKey());
            p[i] = entries.get(i).getValue() / total;
        }
        return new RequestMix(Collections.unmodifiableList(shapes), p);
    }

    /**
     * The most frequent shapes whose probabilities add up to at least {@code coverage} ({@code 0 < coverage <= 1}),
     * renormalised: the rare shapes are left out, as the paper's "typical pods" leave them out.
     */
    public RequestMix top(double coverage) {
        if (!(coverage > 0) || coverage > 1) {
            throw new InvalidValueException("requestMix.coverage", coverage, "must be in (0, 1]");
        }
        Map<RequestShape, Double> kept = new LinkedHashMap<>();
        double sum = 0;
        for (int i = 0; i < shapes.size() && sum < coverage - 1e-12; i++) {
            kept.put(shapes.get(i), probabilities[i]);
            sum += probabilities[i];
        }
        return of(kept);
    }

    /** Number of shapes. */
    public int size() {
        return shapes.size();
    }

    /** The {@code i}-th shape, in decreasing probability. */
    public RequestShape shape(int i) {
        return shapes.get(i);
    }

    /** The probability of the {@code i}-th shape. */
    public double probability(int i) {
        return probabilities[i];
    }

    /**
     * The host CPU this mix asks per unit of GPU compute it asks, in millicores per percent of one GPU:
     * {@code sum of p(m) x cpu(m)} over every shape, host-only shapes included, divided by
     * {@code sum of p(m) x gpus(m) x share(m)} over the shapes that ask GPUs. It is the CPU a node must keep
     * free for each percent of its free GPU compute to be used by requests like these; the fragmentation
     * measure's CPU balance term ({@link Fragmentation}) reads it. 0 when no shape asks a GPU (then there is
     * no ratio, and the term is 0).
     *
     * <p>Example: 3 in 4 requests ask one whole GPU and 12 cores, 1 in 4 asks 32 cores and no GPU:
     * {@code (0.75 x 12000 + 0.25 x 32000) / (0.75 x 100)} = about 226.7 millicores per percent, 22.7 cores
     * per GPU.
     */
    public double cpuPerGpuPercent() {
        return cpuPerGpuPercent;
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("RequestMix[");
        for (int i = 0; i < shapes.size(); i++) {
            if (i > 0) {
                sb.append(", ");
            }
            sb.append(shapes.get(i)).append('=').append(String.format(java.util.Locale.ROOT, "%.4f", probabilities[i]));
        }
        return sb.append(']').toString();
    }
}
