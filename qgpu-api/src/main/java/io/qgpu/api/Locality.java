package io.qgpu.api;

import java.util.Optional;

/**
 * Gemini's locality labels.
 * <ul>
 *   <li>{@code affinity}: tenants with the same label go to the same GPU (the first may open an idle GPU);</li>
 *   <li>{@code antiAffinity}: tenants with the same label never share a GPU;</li>
 *   <li>{@code exclusion}: a GPU holds tenants of one exclusion label only (tenants without one may
 *       not join a GPU that has one, and a labelled tenant may not join a GPU with unlabelled tenants).</li>
 * </ul>
 *
 * <pre>{@code
 * Locality l = Locality.none().withAffinity("pipeline-7").withExclusion("team-a");
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public record Locality(Optional<String> affinity, Optional<String> antiAffinity, Optional<String> exclusion) {

    private static final Locality NONE = new Locality(Optional.empty(), Optional.empty(), Optional.empty());

    public Locality {
        check("locality.affinity", affinity);
        check("locality.antiAffinity", antiAffinity);
        check("locality.exclusion", exclusion);
    }

    private static void check(String field, Optional<String> v) {
        Validate.notNull(field, v);
        v.ifPresent(s -> Validate.notBlank(field, s));
    }

    public static Locality none() {
        return NONE;
    }

    public static Locality of(String affinity, String antiAffinity, String exclusion) {
        return new Locality(Optional.ofNullable(affinity), Optional.ofNullable(antiAffinity),
                Optional.ofNullable(exclusion));
    }

    public Locality withAffinity(String label) {
        return new Locality(Optional.of(label), antiAffinity, exclusion);
    }

    public Locality withAntiAffinity(String label) {
        return new Locality(affinity, Optional.of(label), exclusion);
    }

    public Locality withExclusion(String label) {
        return new Locality(affinity, antiAffinity, Optional.of(label));
    }

    public boolean isNone() {
        return equals(NONE);
    }
}
