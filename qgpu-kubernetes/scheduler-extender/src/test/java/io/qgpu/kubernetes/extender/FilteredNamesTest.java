package io.qgpu.kubernetes.extender;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.fabric8.kubernetes.api.model.Pod;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntPredicate;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * Prioritize after filter takes the names the filter passed ({@link FilteredNames}) exactly when its
 * {@code NodeNames} array is, byte for byte, the filter reply's for the same pod bytes and the name
 * table is the same object; any difference reads the names as usual; the answer is the same either
 * way; two threads' filter and prioritize pairs for different pods never get each other's names; and
 * the server files what its filter passed.
 */
class FilteredNamesTest {

    private static final List<String> NODES = IntStream.range(0, 600).mapToObj(i -> "node-" + i).toList();
    private static final NodeNameTable TABLE = NodeNameTable.of(NODES);

    /** What a parse gave: the pod, the names and their positions, or the 4xx. */
    private record Outcome(Pod pod, List<String> names, List<Integer> positions, String error) {
        static Outcome of(java.util.function.Supplier<ExtenderRequests.Args> parse) {
            ExtenderRequests.Args a;
            try {
                a = parse.get();
            } catch (BadRequestException e) {
                return new Outcome(null, null, null, e.status() + " " + e.getMessage());
            }
            List<Integer> positions = new ArrayList<>();
            for (int j = 0; j < a.nodeNames().size(); j++) {
                positions.add(((CandidateNames) a.nodeNames()).position(j));
            }
            return new Outcome(a.pod(), List.copyOf(a.nodeNames()), positions, null);
        }
    }

    /** The filter's request for {@code pod}: {@code count} names of the table from {@code first} on. */
    private static byte[] filterBody(byte[] pod, int first, int count) {
        return LoadRequests.args(pod, LoadRequests.namesArray(NODES.subList(first, first + count)));
    }

    /** The names the filter passes: those asked whose index {@code keep} accepts, with their positions (as GpuExtender passes them). */
    private static CandidateNames passed(List<String> asked, IntPredicate keep) {
        CandidateNames from = (CandidateNames) asked;
        String[] names = new String[from.size()];
        int[] positions = new int[from.size()];
        int n = 0;
        for (int j = 0; j < from.size(); j++) {
            if (keep.test(j)) {
                names[n] = from.get(j);
                positions[n++] = from.position(j);
            }
        }
        return new CandidateNames(names, positions, n, from.table());
    }

    /** The filter reply of {@code passed} as the server writes it. */
    private static byte[] reply(List<String> passed) {
        return ExtenderRequests.write(ExtenderProtocol.FilterResult.ofNames(passed, Map.of("node-599", "no room"), Map.of()));
    }

    /** The bytes of the {@code NodeNames} array of a filter reply, found by Jackson's parser. */
    static byte[] namesArrayOf(byte[] reply) {
        try (JsonParser p = TestSupport.JSON.createParser(reply)) {
            p.nextToken();
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                JsonToken t = p.nextToken();
                if (field.equals("NodeNames") && t == JsonToken.START_ARRAY) {
                    int start = (int) p.currentTokenLocation().getByteOffset();
                    p.skipChildren();
                    return Arrays.copyOfRange(reply, start, (int) p.currentTokenLocation().getByteOffset() + 1);
                }
                p.skipChildren();
            }
            throw new AssertionError("no NodeNames array in " + new String(reply, StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Outcome fresh(byte[] body, NodeNameTable table) {
        return Outcome.of(() -> ExtenderRequests.parseArgs(body, table, new RecentPods(), null));
    }

    @Test
    void prioritizeTakesTheNamesItsFilterPassedWhenItListsTheirVeryBytes() {
        RecentPods pods = new RecentPods();
        FilteredNames filtered = new FilteredNames();
        for (int k = 0; k < 4; k++) {
            byte[] pod = LoadRequests.pod(k);
            ExtenderRequests.Args filter = ExtenderRequests.parseArgs(filterBody(pod, 10 * k, 500), TABLE, pods, filtered);
            int m = k;
            CandidateNames passed = passed(filter.nodeNames(), j -> m == 3 ? false : j % (m + 2) != 0);   // the last passes none
            filtered.file(filter.pod(), passed);
            byte[] body = LoadRequests.args(pod, namesArrayOf(reply(passed)));
            ExtenderRequests.Args prioritize = ExtenderRequests.parseArgs(body, TABLE, pods, filtered);
            assertSame(passed, prioritize.nodeNames(), "the filter's names, not read again");
            assertSame(filter.pod(), prioritize.pod());
            assertEquals(fresh(body, TABLE), Outcome.of(() -> prioritize));
            assertEquals(ExtenderRequests.parseArgsInFull(body).nodeNames(), prioritize.nodeNames());
        }
    }

    @Test
    void anyDifferenceReadsTheNamesAsUsualAndAnswersAlike() {
        RecentPods pods = new RecentPods();
        FilteredNames filtered = new FilteredNames();
        byte[] pod = LoadRequests.pod(1);
        byte[] otherPod = LoadRequests.pod(2);
        ExtenderRequests.Args filter = ExtenderRequests.parseArgs(filterBody(pod, 0, 500), TABLE, pods, filtered);
        CandidateNames passed = passed(filter.nodeNames(), j -> j % 2 == 0);
        filtered.file(filter.pod(), passed);
        ExtenderRequests.Args otherFilter = ExtenderRequests.parseArgs(filterBody(otherPod, 0, 500), TABLE, pods, filtered);
        filtered.file(otherFilter.pod(), passed(otherFilter.nodeNames(), j -> j % 3 == 0));
        String array = new String(namesArrayOf(reply(passed)), StandardCharsets.US_ASCII);
        List<String> swapped = new ArrayList<>(passed);
        swapped.set(0, passed.get(1));
        swapped.set(1, passed.get(0));
        String podText = new String(pod, StandardCharsets.UTF_8);

        Map<String, byte[]> bodies = new LinkedHashMap<>();
        bodies.put("the last name's last byte", LoadRequests.args(pod, ascii(array.substring(0, array.length() - 3) + "9\"]")));
        bodies.put("a space after a comma", LoadRequests.args(pod, ascii(array.replaceFirst(",", ", "))));
        bodies.put("the last name left out", LoadRequests.args(pod, ascii(array.substring(0, array.lastIndexOf(',')) + "]")));
        bodies.put("a name more", LoadRequests.args(pod, ascii(array.substring(0, array.length() - 1) + ",\"node-599\"]")));
        bodies.put("two names swapped", LoadRequests.args(pod, LoadRequests.namesArray(swapped)));
        bodies.put("another pod's bytes", LoadRequests.args(otherPod, ascii(array)));
        bodies.put("the pod's bytes with a space", LoadRequests.args(ascii(podText.replaceFirst("\\{", "{ ")), ascii(array)));
        bodies.put("a name twice", LoadRequests.args(pod, ascii(array.substring(0, array.length() - 1) + ",\"node-0\"]")));
        for (Map.Entry<String, byte[]> e : bodies.entrySet()) {
            Outcome read = Outcome.of(() -> {
                ExtenderRequests.Args a = ExtenderRequests.parseArgs(e.getValue(), TABLE, pods, filtered);
                assertNotSame(passed, a.nodeNames(), e.getKey());
                return a;
            });
            assertEquals(fresh(e.getValue(), TABLE), read, e.getKey());
        }

        // the table built again (the same names, another object)
        NodeNameTable again = NodeNameTable.of(NODES);
        byte[] same = LoadRequests.args(pod, ascii(array));
        ExtenderRequests.Args withAgain = ExtenderRequests.parseArgs(same, again, pods, filtered);
        assertNotSame(passed, withAgain.nodeNames());
        assertSame(again, ((CandidateNames) withAgain.nodeNames()).table());
        assertEquals(fresh(same, again), Outcome.of(() -> withAgain));
        // and with the same table, the very bytes still take the filter's names
        assertSame(passed, ExtenderRequests.parseArgs(same, TABLE, pods, filtered).nodeNames());
    }

    @Test
    void namesThatAreNotAllTheTablesPlainNamesAreNotFiled() {
        NodeNameTable table = NodeNameTable.of(List.of("node-a", "node-\"q\"", "node-b"));
        RecentPods pods = new RecentPods();
        FilteredNames filtered = new FilteredNames();
        byte[] pod = LoadRequests.pod(5);
        for (List<String> asked : List.of(List.of("node-a", "node-\"q\""), List.of("node-a", "unknown"))) {
            ExtenderRequests.Args filter = ExtenderRequests.parseArgs(LoadRequests.args(pod,
                    ascii(TestSupport.JSON.valueToTree(asked).toString())), table, pods, filtered);
            CandidateNames passed = passed(filter.nodeNames(), j -> true);
            assertNull(ReplyWriter.plainNamesArray(passed));
            filtered.file(filter.pod(), passed);
            byte[] body = LoadRequests.args(pod, namesArrayOf(reply(passed)));
            ExtenderRequests.Args prioritize = ExtenderRequests.parseArgs(body, table, pods, filtered);
            assertNotSame(passed, prioritize.nodeNames());
            assertEquals(fresh(body, table), Outcome.of(() -> prioritize));
        }
    }

    /** The filed bytes are the reply's: {@link ReplyWriter#plainNamesArray} against written replies, on seeded names. */
    @Test
    void theFiledArrayIsTheBytesTheFilterReplyHas() {
        Random r = new Random(20261208L);
        for (int i = 0; i < 200; i++) {
            int n = i == 0 ? 0 : r.nextInt(40);
            String[] names = new String[n];
            int[] positions = new int[n];
            List<Integer> order = new ArrayList<>(IntStream.range(0, NODES.size()).boxed().toList());
            java.util.Collections.shuffle(order, r);
            for (int j = 0; j < n; j++) {
                positions[j] = order.get(j);
            }
            CandidateNames list = new CandidateNames(names, positions, n, TABLE);
            assertArrayEquals(namesArrayOf(reply(list)), ReplyWriter.plainNamesArray(list), list::toString);
        }
    }

    /**
     * Two threads, each with its own pods, filter and prioritize at once on one memo of pods and one
     * of filtered names: each prioritize gets its own filter's names (taken when the bytes are its
     * filter's, read otherwise), never the other thread's.
     */
    @Test
    void twoThreadsFilterAndPrioritizeDifferentPodsWithoutGettingEachOthersNames() throws Exception {
        RecentPods pods = new RecentPods();
        FilteredNames filtered = new FilteredNames();
        int rounds = 400;
        AtomicInteger taken = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(2);
        CountDownLatch go = new CountDownLatch(1);
        List<Future<?>> done = new ArrayList<>();
        for (int t = 0; t < 2; t++) {
            int id = t;
            done.add(pool.submit(() -> {
                Random r = new Random(31L + id);
                go.await();
                for (int k = 0; k < rounds; k++) {
                    byte[] pod = LoadRequests.pod(id * 100_000 + k % 50);   // each thread's own pods, again and again
                    ExtenderRequests.Args filter = ExtenderRequests.parseArgs(filterBody(pod, r.nextInt(100), 500), TABLE, pods, filtered);
                    int mod = 2 + r.nextInt(5);
                    int rest = r.nextInt(mod);
                    CandidateNames passed = passed(filter.nodeNames(), j -> j % mod == rest);
                    filtered.file(filter.pod(), passed);
                    byte[] body = LoadRequests.args(pod, namesArrayOf(reply(passed)));
                    ExtenderRequests.Args prioritize = ExtenderRequests.parseArgs(body, TABLE, pods, filtered);
                    assertEquals(List.copyOf(passed), List.copyOf(prioritize.nodeNames()), "thread " + id + " round " + k);
                    assertEquals(filter.pod(), prioritize.pod());
                    if (prioritize.nodeNames() == passed) {
                        taken.incrementAndGet();
                    }
                }
                return null;
            }));
        }
        go.countDown();
        for (Future<?> f : done) {
            f.get(120, TimeUnit.SECONDS);
        }
        pool.shutdown();
        assertTrue(taken.get() > 0, "the filters' names were never taken");
    }

    /** An extender that passes every other name and records what prioritize was given. */
    private static final class Recording implements Extender {
        volatile List<String> passed;
        volatile List<String> prioritized;

        @Override
        public NodeNameTable nodeNames() {
            return TABLE;
        }

        @Override
        public ExtenderProtocol.FilterResult filter(ExtenderRequests.Args args) {
            passed = passed(args.nodeNames(), j -> j % 2 == 1);
            return ExtenderProtocol.FilterResult.ofNames(passed, Map.of(), Map.of());
        }

        @Override
        public List<ExtenderProtocol.HostPriority> prioritize(ExtenderRequests.Args args) {
            prioritized = args.nodeNames();
            long[] scores = new long[args.nodeNames().size()];
            for (int j = 0; j < scores.length; j++) {
                scores[j] = j % 11;
            }
            return new Priorities(args.nodeNames(), scores);
        }

        @Override
        public ExtenderProtocol.BindingResult bind(ExtenderProtocol.BindingArgs args) {
            throw new BadRequestException(404, "not served here");
        }
    }

    @Test
    void theServerFilesWhatItsFilterPassedAndPrioritizeTakesIt() throws Exception {
        Recording ext = new Recording();
        Recording other = new Recording();
        try (ExtenderServer server = ExtenderServer.builder(ext).port(0).threads(1).build().start();
                ExtenderServer unprimed = ExtenderServer.builder(other).port(0).threads(1).build().start()) {
            byte[] pod = LoadRequests.pod(7);
            HttpResponse<String> filter = TestSupport.post(server.baseUrl() + "/filter", filterBody(pod, 3, 500));
            assertEquals(200, filter.statusCode(), filter.body());
            byte[] body = LoadRequests.args(pod, namesArrayOf(filter.body().getBytes(StandardCharsets.UTF_8)));
            HttpResponse<String> prioritize = TestSupport.post(server.baseUrl() + "/prioritize", body);
            assertSame(ext.passed, ext.prioritized);
            HttpResponse<String> unreused = TestSupport.post(unprimed.baseUrl() + "/prioritize", body);
            assertNotSame(other.passed, other.prioritized);
            assertEquals(200, prioritize.statusCode(), prioritize.body());
            assertEquals(unreused.body(), prioritize.body());
        }
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }
}
