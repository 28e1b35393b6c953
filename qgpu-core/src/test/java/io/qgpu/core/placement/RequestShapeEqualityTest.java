package io.qgpu.core.placement;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * {@link RequestShape}'s written-out {@code equals} and {@code hashCode} are the record's own: on seeded
 * random pairs of shapes (equal and unequal in each component), they agree with those a record of the
 * same components generates, so maps of shapes (the {@link RequestSample}'s counts, and the mix built
 * from them in the maps' order) are unchanged.
 */
class RequestShapeEqualityTest {

    /** A record of the same components, with the generated methods. */
    private record Generated(int gpus, int computePercent, long cpuMillis, Set<String> models) {
    }

    private static final List<Set<String>> MODELS = List.of(Set.of(), Set.of("Tesla T4"),
            Set.of("Tesla T4", "NVIDIA A100-SXM4-40GB"), Set.of("NVIDIA A100-SXM4-40GB"));

    @Test
    void equalityAndHashAreTheRecordsOwn() {
        SplittableRandom rnd = new SplittableRandom(29);
        int equal = 0;
        for (int i = 0; i < 20_000; i++) {
            RequestShape a = shape(rnd);
            RequestShape b = rnd.nextInt(3) == 0 ? a : shape(rnd);
            Generated ga = generated(a);
            Generated gb = generated(b);
            assertEquals(ga.hashCode(), a.hashCode(), a::toString);
            assertEquals(ga.equals(gb), a.equals(b), () -> a + " / " + b);
            equal += a.equals(b) ? 1 : 0;
        }
        assertEquals(false, shape(new SplittableRandom(1)).equals("not a shape"));
        assertEquals(true, equal > 1_000 && equal < 19_000, "both outcomes compared: " + equal);
    }

    private static RequestShape shape(SplittableRandom rnd) {
        int gpus = rnd.nextInt(3);
        if (gpus == 0) {
            return RequestShape.hostOnly(1000L * rnd.nextInt(3));
        }
        return new RequestShape(gpus, 1 + rnd.nextInt(2), 1000L * rnd.nextInt(3), MODELS.get(rnd.nextInt(MODELS.size())));
    }

    private static Generated generated(RequestShape s) {
        return new Generated(s.gpus(), s.computePercent(), s.cpuMillis(), s.models());
    }
}
