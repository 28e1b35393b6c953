package io.qgpu.kubernetes.node.dra;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.kubernetes.node.dra.NvLinkAttribute.Lanes;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** The {@code nvlink} device attribute: the forms the driver writes, what the allocator reads back, what is refused. */
class NvLinkAttributeTest {
    static final Lanes NV18S = new Lanes(18, true);

    static List<Integer> range(int from, int to) {
        return IntStream.range(from, to).boxed().toList();
    }

    /** Every peer of {@code self} among GPUs 0..n-1 with these lanes. */
    static Map<Integer, Lanes> all(int self, int n, Lanes l) {
        Map<Integer, Lanes> m = new LinkedHashMap<>();
        for (int i = 0; i < n; i++) {
            if (i != self) {
                m.put(i, l);
            }
        }
        return m;
    }

    static List<Integer> peers(int self, int n) {
        return range(0, n).stream().filter(i -> i != self).toList();
    }

    /** Writes, reads back, and checks that every peer reads as written. */
    static String roundTrip(int self, List<Integer> peers, Map<Integer, Lanes> links) {
        String s = NvLinkAttribute.format(self, peers, links).orElseThrow();
        assertTrue(s.length() <= DraNames.MAX_STRING_ATTRIBUTE, s);
        NvLinkAttribute a = NvLinkAttribute.parse("gpu-" + self, self, s);
        for (int p : peers) {
            assertEquals(Optional.ofNullable(links.get(p)), a.to(p), s + " to " + p);
        }
        return s;
    }

    @Test
    void anNvSwitchBoxIsOneEntryWhateverItsSize() {
        assertEquals("*:18s", roundTrip(0, peers(0, 8), all(0, 8, NV18S)));
        assertEquals("*:18s", roundTrip(15, peers(15, 16), all(15, 16, NV18S)));
        assertEquals("*:12s", roundTrip(3, peers(3, 8), all(3, 8, new Lanes(12, true))));
        // the same without NVSwitch (every pair linked directly); for one peer, naming it is as short and says more
        assertEquals("*:4", roundTrip(1, peers(1, 3), all(1, 3, new Lanes(4, false))));
        assertEquals("0:4", roundTrip(1, peers(1, 2), all(1, 2, new Lanes(4, false))));
    }

    @Test
    void aHybridCubeMeshListsItsPeers() {
        // DGX-1V GPU 0: NV1 to 1 and 2, NV2 to 3 and 4, nothing to 5, 6, 7
        Map<Integer, Lanes> gpu0 = Map.of(1, new Lanes(1, false), 2, new Lanes(1, false), 3, new Lanes(2, false), 4, new Lanes(2, false));
        assertEquals("1:1,2:1,3:2,4:2", roundTrip(0, peers(0, 8), gpu0));
        // an NVLink bridge between two of four GPUs
        assertEquals("1:12", roundTrip(0, peers(0, 4), Map.of(1, new Lanes(12, false))));
        // no NVLink at all: no attribute
        assertEquals(Optional.empty(), NvLinkAttribute.format(0, peers(0, 4), Map.of()));
    }

    @Test
    void linksDownAreNamedBesideTheStarAndTheLongestCaseFits() {
        // GPU 3 of a 16-GPU NVSwitch box with one link down: 17 lanes to it, 18 to the rest
        Map<Integer, Lanes> gpu0 = all(0, 16, NV18S);
        gpu0.put(3, new Lanes(17, true));
        assertEquals("*:18s,3:17s", roundTrip(0, peers(0, 16), gpu0));
        // seen from GPU 3: 17 to everyone
        assertEquals("*:17s", roundTrip(3, peers(3, 16), all(3, 16, new Lanes(17, true))));
        // half the peers of a 16-GPU box differ (7 of 15), two digits each: still within 64 characters
        Map<Integer, Lanes> half = all(0, 16, NV18S);
        for (int p = 9; p < 16; p++) {
            half.put(p, new Lanes(16, true));
        }
        String s = roundTrip(0, peers(0, 16), half);
        assertEquals("*:18s,9:16s,10:16s,11:16s,12:16s,13:16s,14:16s,15:16s", s);
        // a peer without NVLink under the star is written with 0 lanes
        Map<Integer, Lanes> gap = all(0, 8, NV18S);
        gap.remove(5);
        assertEquals("*:18s,5:0", roundTrip(0, peers(0, 8), gap));
    }

    @Test
    void whatCannotBeWrittenIn64CharactersIsRefusedNamingTheGpu() {
        // 15 peers, each with another lane count: no short form exists
        Map<Integer, Lanes> odd = new LinkedHashMap<>();
        for (int p = 1; p < 16; p++) {
            odd.put(p, new Lanes(p + 10, p % 2 == 0));
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> NvLinkAttribute.format(0, peers(0, 16), odd));
        assertTrue(e.getMessage().startsWith("GPU 0: its NVLinks cannot be written in 64 characters; the shortest form is "), e.getMessage());
        IllegalArgumentException stranger = assertThrows(IllegalArgumentException.class,
                () -> NvLinkAttribute.format(0, List.of(1, 2), Map.of(3, NV18S)));
        assertEquals("GPU 0: NVLinks to [3], not all among its peers [1, 2]", stranger.getMessage());
        assertThrows(IllegalArgumentException.class, () -> NvLinkAttribute.format(0, List.of(0, 1), Map.of(1, NV18S)));
        assertThrows(IllegalArgumentException.class, () -> new Lanes(0, false));
        assertThrows(IllegalArgumentException.class, () -> new Lanes(65, true));
    }

    @Test
    void parseReadsEveryFormAndSaysWhatIsWrong() {
        NvLinkAttribute a = NvLinkAttribute.parse("gpu-2", 2, "*:18s,5:0,7:12");
        assertEquals(Optional.of(NV18S), a.to(0));
        assertEquals(Optional.empty(), a.to(5));
        assertEquals(Optional.of(new Lanes(12, false)), a.to(7));
        assertEquals("*:18s,5:0,7:12", a.toString());
        assertEquals(Optional.empty(), NvLinkAttribute.parse("gpu-0", 0, "1:2").to(3));

        String p = "device gpu-1: attribute nvlink = ";
        Object[][] cases = {
                {"", "\"\": must have at least one entry <peer>:<lanes>[s] (a GPU without NVLink has no nvlink attribute)"},
                {"0:18s,", "\"0:18s,\": entry 2 \"\" must be <peer>:<lanes>[s]: <peer> a GPU's index or *, <lanes> 0 to 64, s for an NVSwitch"},
                {"0=18", "\"0=18\": entry 1 \"0=18\" must be <peer>:<lanes>[s]: <peer> a GPU's index or *, <lanes> 0 to 64, s for an NVSwitch"},
                {"00:4", "\"00:4\": entry 1 \"00:4\" must be <peer>:<lanes>[s]: <peer> a GPU's index or *, <lanes> 0 to 64, s for an NVSwitch"},
                {"0:4S", "\"0:4S\": entry 1 \"0:4S\" must be <peer>:<lanes>[s]: <peer> a GPU's index or *, <lanes> 0 to 64, s for an NVSwitch"},
                {"0:65", "\"0:65\": entry 1 \"0:65\": at most 64 lanes"},
                {"0:0s", "\"0:0s\": entry 1 \"0:0s\": 0 lanes (no NVLink) go through no NVSwitch"},
                {"*:0", "\"*:0\": entry 1 \"*:0\": * stands for GPUs with NVLink (leave out the attribute for none)"},
                {"*:18s,*:12", "\"*:18s,*:12\": entry 2 \"*:12\": a second * entry"},
                {"1:4", "\"1:4\": entry 1 \"1:4\" names the GPU's own index 1"},
                {"0:4,2:4,0:2", "\"0:4,2:4,0:2\": entry 3 \"0:2\" names GPU 0 a second time"},
                {"0:1,".repeat(16) + "0:1", "\"" + "0:1,".repeat(16) + "0:1\": is 67 characters long; at most 64"}};
        for (Object[] c : cases) {
            NvLinkAttribute.InvalidException e = assertThrows(NvLinkAttribute.InvalidException.class,
                    () -> NvLinkAttribute.parse("gpu-1", 1, (String) c[0]), (String) c[0]);
            assertEquals(p + c[1], e.getMessage());
            assertEquals("gpu-1", e.device());
            assertEquals(c[0], e.value());
        }
        assertEquals(p + "\"null\": must have at least one entry <peer>:<lanes>[s] (a GPU without NVLink has no nvlink attribute)",
                assertThrows(NvLinkAttribute.InvalidException.class, () -> NvLinkAttribute.parse("gpu-1", 1, null)).getMessage());
    }
}
