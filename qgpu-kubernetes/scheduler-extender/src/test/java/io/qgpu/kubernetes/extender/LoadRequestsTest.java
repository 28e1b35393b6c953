package io.qgpu.kubernetes.extender;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Pod;
import io.qgpu.api.Claim;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.PriorityClass;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The generator's bodies are requests the extender accepts, and its readers read the extender's answers. */
class LoadRequestsTest {

    @Test
    void podsAreTheSeededMixAndFilterBodiesCarryTheirWindow() {
        PodClaims claims = new PodClaims(GranularityRules.ofDefaults());
        int two = 0;
        int whole = 0;
        int online = 0;
        int n = 2000;
        LoadRequests requests = new LoadRequests(50, 10);
        for (int i = 0; i < n; i++) {
            ExtenderRequests.Args args = ExtenderRequests.parseArgs(requests.filter(i, LoadRequests.pod(i)));
            Pod pod = args.pod();
            assertEquals("load-" + i, pod.getMetadata().getName());
            assertEquals(10, args.nodeNames().size());
            assertEquals("node-" + (i * 10 % 50), args.nodeNames().get(0));
            Claim c = claims.claimOf(pod).orElseThrow();
            two += c.gpuCount() == 2 ? 1 : 0;
            whole += c.exclusive() ? 1 : 0;
            online += c.priority() == PriorityClass.ONLINE ? 1 : 0;
        }
        // the mix: about 5% 2-GPU slices, 5% whole GPUs, 40% online (seeded, so the counts never change)
        assertTrue(Math.abs(two - n * 0.05) < n * 0.02, "2-GPU pods " + two);
        assertTrue(Math.abs(whole - n * 0.05) < n * 0.02, "whole-GPU pods " + whole);
        assertTrue(Math.abs(online - n * 0.40) < n * 0.04, "online pods " + online);
    }

    /**
     * The generator's byte scans of the answers (for the layout the extender writes) agree with a JSON
     * tree of the same answers on seeded filter and prioritize replies, written from the name table
     * as the extender writes them and by data binding, names of every kind, ties and empty replies.
     */
    @Test
    void scansOfTheAnswersAgreeWithATreeOfThem() throws Exception {
        java.util.Random r = new java.util.Random(31L);
        String[] parts = {"node-", "7", "a", "\"", "\\", "\u00e9", "\t", "-"};
        List<String> all = new java.util.ArrayList<>();
        for (int i = 0; i < 200; i++) {
            all.add(i % 4 == 0 ? parts[r.nextInt(parts.length)] + i : "node-" + i);
        }
        NodeNameTable table = NodeNameTable.of(all);
        for (int round = 0; round < 300; round++) {
            int n = r.nextInt(30);
            String[] names = new String[n];
            int[] positions = new int[n];
            long[] scores = new long[n];
            int start = r.nextInt(all.size());
            for (int j = 0; j < n; j++) {
                names[j] = all.get((start + j) % all.size());
                positions[j] = table.indexOf(names[j]);
                scores[j] = r.nextInt(11);
            }
            List<String> list = new CandidateNames(names, positions, n, table);
            Priorities priorities = new Priorities(list, scores);
            for (byte[] answer : List.of(ExtenderRequests.write(priorities), ExtenderRequests.write(new java.util.ArrayList<>(priorities)))) {
                String want = null;
                long top = -1;
                for (var e : TestSupport.tree(answer)) {
                    if (e.get("Score").asLong() > top) {
                        top = e.get("Score").asLong();
                        want = e.get("Host").asText();
                    }
                }
                assertEquals(want, LoadRequests.best(answer), new String(answer, StandardCharsets.UTF_8));
            }
            byte[] filter = ExtenderRequests.write(ExtenderProtocol.FilterResult.ofNames(list, java.util.Map.of("x", "full"),
                    java.util.Map.of()));
            byte[] fit = LoadRequests.fitNamesArray(filter);
            if (n == 0) {
                assertNull(fit);
            } else {
                assertEquals(List.of(names), List.of(TestSupport.JSON.readValue(fit, String[].class)));
            }
        }
    }

    @Test
    void answersAreReadAsTheExtenderWritesThem() throws Exception {
        byte[] filter = ExtenderRequests.write(ExtenderProtocol.FilterResult.ofNames(List.of("a", "b"), java.util.Map.of("c", "full"),
                java.util.Map.of()));
        assertArrayEquals(LoadRequests.namesArray(List.of("a", "b")), LoadRequests.fitNamesArray(filter));
        assertNull(LoadRequests.fitNamesArray("{\"Nodes\":null,\"NodeNames\":null,\"Error\":\"\"}".getBytes(StandardCharsets.UTF_8)));
        assertNull(LoadRequests.fitNamesArray(ExtenderRequests.write(ExtenderProtocol.FilterResult.ofNames(List.of(),
                java.util.Map.of("c", "full"), java.util.Map.of()))));
        // names that need escaping come through as the same names
        List<String> odd = List.of("q\"uote", "back\\slash", "\u00e9\ud83d\ude80", "tab\t");
        byte[] oddArray = LoadRequests.fitNamesArray(ExtenderRequests.write(ExtenderProtocol.FilterResult.ofNames(odd,
                java.util.Map.of(), java.util.Map.of())));
        assertEquals(odd, List.of(TestSupport.JSON.readValue(oddArray, String[].class)));
        byte[] scores = ExtenderRequests.write(List.of(new ExtenderProtocol.HostPriority("a", 3),
                new ExtenderProtocol.HostPriority("b", 9), new ExtenderProtocol.HostPriority("c", 9)));
        assertEquals("b", LoadRequests.best(scores));
        String longName = "n".repeat(100) + "\"\u00e9";
        assertEquals(longName, LoadRequests.best(ExtenderRequests.write(List.of(new ExtenderProtocol.HostPriority("short", 1),
                new ExtenderProtocol.HostPriority(longName, 5), new ExtenderProtocol.HostPriority("x".repeat(70), 4)))));
        assertNull(LoadRequests.best("[]".getBytes(StandardCharsets.UTF_8)));
        assertEquals("", LoadRequests.bindError(ExtenderRequests.write(ExtenderProtocol.BindingResult.ok())));
        assertEquals("no room", LoadRequests.bindError(ExtenderRequests.write(new ExtenderProtocol.BindingResult("no room"))));
        ExtenderProtocol.BindingArgs b = ExtenderRequests.parseBinding(LoadRequests.binding(7, "node-3"));
        assertEquals(new ExtenderProtocol.BindingArgs("load-7", "load", "uid-7", "node-3"), b);
    }
}
