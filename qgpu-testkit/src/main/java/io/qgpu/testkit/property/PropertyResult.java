package io.qgpu.testkit.property;

/**
 * Outcome of {@link Property#run}: every case passed, or a case failed and was shrunk.
 *
 * <pre>{@code
 * PropertyResult<Integer> r = Property.forAll(Gens.ints(0, 1000)).seed(1).run(x -> x < 100);
 * if (r instanceof PropertyResult.Falsified<Integer> f) {
 *     f.shrunk();     // 100
 *     f.message();    // seed, shrunk case, failure and how to re-run
 * }
 * }</pre>
 *
 * <p>Thread safety: immutable records (the cases are whatever the generator made).
 *
 * @param <T> the case type
 */
public sealed interface PropertyResult<T> {

    /** The property's name (the test, unless given). */
    String name();

    /** The seed the cases came from. */
    long seed();

    /** Throws the failure as an {@link AssertionError}; does nothing when the property held. */
    void orThrow();

    /** Where the seed came from. */
    enum SeedSource {
        /** Fixed in code with {@link Property#seed(long)}. */
        CODE,
        /** From the {@value Seeds#PROPERTY} system property. */
        SYSTEM_PROPERTY,
        /** Fresh for this run. */
        RANDOM
    }

    /** Every case passed. */
    record Passed<T>(String name, long seed, SeedSource source, int cases) implements PropertyResult<T> {
        @Override
        public void orThrow() {
        }
    }

    /**
     * A case failed.
     *
     * @param caseIndex   which case (0-based) failed first
     * @param cases       how many cases were to be run
     * @param original    the failing case as generated
     * @param shrunk      the smallest failing case found
     * @param shrinkSteps how many times a smaller failing case was adopted
     * @param failure     why the shrunk case failed
     */
    record Falsified<T>(String name, long seed, SeedSource source, int caseIndex, int cases, T original, T shrunk,
                        int shrinkSteps, Throwable failure) implements PropertyResult<T> {

        /** Seed, shrunk case, its failure, the original case, and how to re-run this exact case. */
        public String message() {
            StringBuilder sb = new StringBuilder();
            sb.append("Property ").append(name).append(" falsified by case ").append(caseIndex + 1).append(" of ")
                    .append(cases).append(" (seed ").append(seed).append(", ")
                    .append(source == SeedSource.CODE ? "fixed in code" : source == SeedSource.SYSTEM_PROPERTY
                            ? "from -D" + Seeds.PROPERTY : "random").append(")\n");
            sb.append("Shrunk case (after ").append(shrinkSteps).append(" shrink steps):\n  ")
                    .append(render(shrunk, 20_000)).append('\n');
            sb.append("Failure of the shrunk case:\n  ").append(describe(failure)).append('\n');
            sb.append("Original case:\n  ").append(render(original, 4_000)).append('\n');
            if (source == SeedSource.CODE) {
                sb.append("The seed is fixed in code: re-running the test reproduces this case.");
            } else {
                sb.append("Re-run with this seed: -D").append(Seeds.PROPERTY).append('=').append(seed);
                if (name.contains("#")) {
                    sb.append("  (for example ./mvnw test -Dtest='").append(name.substring(name.lastIndexOf('.') + 1))
                            .append("' -D").append(Seeds.PROPERTY).append('=').append(seed).append(')');
                }
            }
            return sb.toString();
        }

        @Override
        public void orThrow() {
            throw new AssertionError(message(), failure);
        }

        private static String describe(Throwable t) {
            String m = t.getMessage();
            if (t instanceof AssertionError && m != null) {
                return m.replace("\n", "\n  ");
            }
            return t.getClass().getName() + (m == null ? "" : ": " + m.replace("\n", "\n  "));
        }

        private static String render(Object o, int max) {
            String s = String.valueOf(o).replace("\n", "\n  ");
            return s.length() <= max ? s : s.substring(0, max) + "... (" + (s.length() - max) + " more chars)";
        }
    }
}
