package io.qgpu.api;

import org.jspecify.annotations.Nullable;
import java.util.Arrays;

/**
 * The link between every pair of a node's GPUs, addressed by the GPUs' positions in
 * {@link Node#gpus()} (0-based). Immutable; symmetric by construction; a GPU has no link to itself.
 *
 * <pre>{@code
 * Topology t = Topology.builder(4)
 *         .defaultLink(new GpuLink.Pcie(TopologyLevel.SYSTEM))
 *         .link(0, 1, new GpuLink.NvLink(2))
 *         .build();
 * t.link(1, 0);   // the NvLink of 2 lanes set for (0, 1)
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public final class Topology {
    private final int size;
    /** Upper triangle, row-major: pair (a,b) with a &lt; b. */
    private final GpuLink[] links;

    private Topology(int size, GpuLink[] links) {
        this.size = size;
        this.links = links;
    }

    /** Every pair connected by the same link (for example NVSwitch: all pairs NVLink). */
    public static Topology uniform(int size, GpuLink link) {
        return builder(size).defaultLink(link).build();
    }

    /** A topology of {@code size} GPUs; every pair must be set, or a default given. */
    public static Builder builder(int size) {
        return new Builder(size);
    }

    /** Number of GPUs. */
    public int size() {
        return size;
    }

    /** The link between the GPUs at positions {@code a} and {@code b} ({@code a != b}). */
    public GpuLink link(int a, int b) {
        return links[slot(size, a, b)];
    }

    private static int slot(int size, int a, int b) {
        if (a < 0 || a >= size) {
            throw new InvalidValueException("topology.position", a, "must be between 0 and " + (size - 1));
        }
        if (b < 0 || b >= size) {
            throw new InvalidValueException("topology.position", b, "must be between 0 and " + (size - 1));
        }
        if (a == b) {
            throw new InvalidValueException("topology.position", a, "a GPU has no link to itself");
        }
        int lo = Math.min(a, b);
        int hi = Math.max(a, b);
        // pairs before row lo: sum_{r<lo} (size-1-r)
        return lo * (2 * size - lo - 1) / 2 + (hi - lo - 1);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Topology t && t.size == size && Arrays.equals(t.links, links);
    }

    @Override
    public int hashCode() {
        return 31 * size + Arrays.hashCode(links);
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("Topology[");
        for (int a = 0; a < size; a++) {
            for (int b = a + 1; b < size; b++) {
                sb.append(a).append('-').append(b).append('=').append(link(a, b).label()).append(' ');
            }
        }
        return sb.append(']').toString();
    }

    /** Fail-fast builder; {@link #build()} refuses a pair left unset when no default is given. */
    public static final class Builder {
        private final int size;
        private final GpuLink[] links;
        private @Nullable GpuLink defaultLink;

        private Builder(int size) {
            this.size = Validate.between("topology.size", size, 0, 4096);
            this.links = new GpuLink[size * (size - 1) / 2];
        }

        public Builder link(int a, int b, GpuLink link) {
            links[slot(size, a, b)] = Validate.notNull("topology.link[" + a + "," + b + "]", link);
            return this;
        }

        public Builder defaultLink(GpuLink link) {
            this.defaultLink = Validate.notNull("topology.defaultLink", link);
            return this;
        }

        public Topology build() {
            GpuLink[] copy = links.clone();
            for (int a = 0; a < size; a++) {
                for (int b = a + 1; b < size; b++) {
                    int s = slot(size, a, b);
                    if (copy[s] == null) {
                        if (defaultLink == null) {
                            throw new InvalidValueException("topology.link[" + a + "," + b + "]", null,
                                    "every pair of GPUs needs a link (or give a defaultLink)");
                        }
                        copy[s] = defaultLink;
                    }
                }
            }
            return new Topology(size, copy);
        }
    }
}
