package io.qgpu.kubernetes.extender;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@link ReplyWriter} writes the same bytes as Jackson's data binding (the writer it replaced) for
 * seeded filter, prioritize, bind and error replies, with names and messages that need escaping
 * (quotes, backslashes, control characters, non-ASCII, surrogate pairs). The comparison is shown to
 * tell apart a writer that differs in one place.
 */
class ReplyWriterTest {

    private static final ObjectMapper BINDING = JsonMapper.builder().disable(SerializationFeature.INDENT_OUTPUT).build();
    private static final String[] PARTS = {"gpu-a", "node-", "\"", "\\", "\n", "\u0001", "\u00e9", "\u6f22", "\ud83d\ude80", "</x>", " ", "0"};

    @Test
    void seededRepliesAreWrittenAsDataBindingWritesThem() throws JsonProcessingException {
        Random r = new Random(424242L);
        int escaped = 0;
        for (int i = 0; i < 600; i++) {
            Object reply = reply(r);
            byte[] expected = BINDING.writeValueAsBytes(reply);
            assertTrue(ReplyWriter.handles(reply));
            assertArrayEquals(expected, ReplyWriter.write(reply, BINDING), () -> new String(expected, StandardCharsets.UTF_8));
            assertArrayEquals(expected, ExtenderRequests.write(reply));
            if (new String(expected, StandardCharsets.UTF_8).contains("\\u0001")) {
                escaped++;
            }
        }
        assertTrue(escaped > 20, "control characters were escaped in only " + escaped + " replies");
    }

    /**
     * The replies the extender makes from a request's names (a {@link CandidateNames} with positions in
     * the ledger's name table, and prioritize's {@link Priorities}), whose plain names are copied from
     * the table's bytes and whose scores are written without a generator, are the bytes data binding
     * writes for the same names and scores as plain lists; names that need escaping, names the table
     * does not hold, and empty replies included.
     */
    @Test
    void repliesMadeFromTheNameTableAreWrittenAsDataBindingWritesThem() throws JsonProcessingException {
        Random r = new Random(20261207L);
        List<String> tableNames = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            String name = i % 3 == 0 ? "node-" + i : text(r) + i;   // plain names, and names of every kind
            tableNames.add(name.isBlank() ? "n" + i : name);
        }
        NodeNameTable table = NodeNameTable.of(tableNames);
        int plain = 0;
        for (int i = 0; i < 300; i++) {
            int n = r.nextInt(40);
            String[] names = new String[n];
            int[] positions = new int[n];
            java.util.Set<String> used = new java.util.HashSet<>();
            int k = 0;
            while (k < n) {
                boolean known = r.nextInt(6) > 0;
                String name = known ? tableNames.get(r.nextInt(tableNames.size())) : "other-" + text(r) + r.nextInt(1000);
                if (used.add(name)) {
                    names[k] = name;
                    positions[k++] = table.indexOf(name);
                }
            }
            CandidateNames list = new CandidateNames(names, positions, n, table);
            long[] scores = new long[n];
            List<ExtenderProtocol.HostPriority> asRecords = new ArrayList<>();
            for (int j = 0; j < n; j++) {
                scores[j] = r.nextInt(11);
                asRecords.add(new ExtenderProtocol.HostPriority(names[j], scores[j]));
                if (positions[j] >= 0 && table.plainAscii(positions[j]) != null) {
                    plain++;
                }
            }
            Priorities priorities = new Priorities(list, scores);
            assertTrue(ReplyWriter.handles(priorities));
            assertArrayEquals(BINDING.writeValueAsBytes(asRecords), ReplyWriter.write(priorities, BINDING));
            assertEquals(asRecords, priorities);
            var filter = ExtenderProtocol.FilterResult.ofNames(list, Map.of("gpu-b", "full"), Map.of());
            var plainFilter = ExtenderProtocol.FilterResult.ofNames(List.of(names), Map.of("gpu-b", "full"), Map.of());
            assertArrayEquals(BINDING.writeValueAsBytes(plainFilter), ReplyWriter.write(filter, BINDING));
            ReplyBuffer into = new ReplyBuffer(16);
            ExtenderRequests.write(priorities, into);
            assertArrayEquals(BINDING.writeValueAsBytes(asRecords), into.toByteArray());
        }
        assertTrue(plain > 1000, "names written from the table's bytes: " + plain);
    }

    @Test
    void aFilterReplyWithNodeObjectsKeepsThemAsSent() throws JsonProcessingException {
        var nodes = TestSupport.tree("{\"apiVersion\":\"v1\",\"kind\":\"NodeList\",\"items\":[{\"metadata\":{\"name\":\"gpu-a\",\"x\":[1,2.5,null,true]}}]}");
        var reply = ExtenderProtocol.FilterResult.ofNodes(nodes, Map.of("gpu-b", "full"), Map.of());
        assertArrayEquals(BINDING.writeValueAsBytes(reply), ReplyWriter.write(reply, BINDING));
    }

    @Test
    void otherValuesAreLeftToDataBinding() {
        assertFalse(ReplyWriter.handles(Map.of("a", 1)));
        assertFalse(ReplyWriter.handles(List.of("gpu-a")));
        assertFalse(ReplyWriter.handles(new ExtenderProtocol.PreemptionResult(Map.of())));
        assertThrows(IllegalArgumentException.class, () -> ReplyWriter.write(List.of("gpu-a"), BINDING));
        assertEquals("{\"a\":1}", ExtenderRequests.writeString(Map.of("a", 1)));
    }

    @Test
    void theComparisonCatchesAWriterThatDiffersInOnePlace() throws JsonProcessingException {
        Random r = new Random(9L);
        int caught = 0;
        for (int i = 0; i < 100; i++) {
            Object reply = reply(r);
            byte[] right = ReplyWriter.write(reply, BINDING);
            // a writer that forgets the Error field of a successful bind
            byte[] wrong = reply instanceof ExtenderProtocol.BindingResult b && b.error().isEmpty()
                    ? "{}".getBytes(StandardCharsets.UTF_8) : right;
            if (!Arrays.equals(BINDING.writeValueAsBytes(reply), wrong)) {
                caught++;
            }
        }
        assertTrue(caught > 0, "the broken writer was never told apart");
    }

    private static Object reply(Random r) {
        switch (r.nextInt(4)) {
            case 0 -> {
                List<ExtenderProtocol.HostPriority> list = new ArrayList<>();
                int n = r.nextInt(20);
                for (int i = 0; i < n; i++) {
                    list.add(new ExtenderProtocol.HostPriority(text(r), r.nextInt(11)));
                }
                return list;
            }
            case 1 -> {
                return new ExtenderProtocol.BindingResult(r.nextBoolean() ? "" : text(r));
            }
            case 2 -> {
                return new ExtenderProtocol.ErrorBody(r.nextInt(5) == 0 ? null : text(r));
            }
            default -> {
                List<String> names = new ArrayList<>();
                Map<String, String> failed = new LinkedHashMap<>();
                Map<String, String> never = new LinkedHashMap<>();
                int n = r.nextInt(15);
                for (int i = 0; i < n; i++) {
                    switch (r.nextInt(3)) {
                        case 0 -> names.add(text(r));
                        case 1 -> failed.put(text(r), text(r));
                        default -> never.put(text(r), text(r));
                    }
                }
                return r.nextInt(8) == 0 ? new ExtenderProtocol.FilterResult(null, null, failed, never, text(r))
                        : ExtenderProtocol.FilterResult.ofNames(names, failed, never);
            }
        }
    }

    private static String text(Random r) {
        StringBuilder s = new StringBuilder();
        int k = r.nextInt(4);
        for (int i = 0; i < k; i++) {
            s.append(PARTS[r.nextInt(PARTS.length)]);
        }
        return s.toString();
    }
}
