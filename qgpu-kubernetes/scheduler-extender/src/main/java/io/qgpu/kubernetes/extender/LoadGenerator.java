package io.qgpu.kubernetes.extender;

import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.Validate;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementConfig;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * A load generator for the extender, on loopback only: it starts the extender in this JVM on
 * {@code 127.0.0.1} (an ephemeral port) over a fake cluster of {@code nodes} nodes of 8 H100 80 GB
 * on NVSwitch, in the demo mode ({@link DemoCluster}: bind runs the whole extender path, pod lookup,
 * placement, commit to the ledger and the annotations, but makes no Kubernetes API calls), and
 * drives it like kube-scheduler with {@code nodeCacheCapable: true}: for each pod, {@code filter}
 * with {@code candidates} node names (a window that moves on per pod, as kube-scheduler's start
 * index does), {@code prioritize} with the nodes that passed, then {@code bind} to the best-scored
 * node. It stops by itself after {@code pods} pods or {@code maxSeconds}, whichever comes first, and
 * reports pods per second and the latency per verb.
 *
 * <p>Two patterns ({@code --pattern}):
 * <ul>
 *   <li>{@link Pattern#PODS} ({@code pods}): {@code concurrency} pods in flight, each going through
 *       all three verbs on its own connection, so up to {@code concurrency} requests of every verb at
 *       once.</li>
 *   <li>{@link Pattern#SCHEDULER} ({@code scheduler}): what one kube-scheduler sends. Its scheduling
 *       cycle is sequential: {@code filter} and {@code prioritize} for one pod at a time, on one
 *       connection. The binding cycle runs apart: each pod's {@code bind} goes to one of
 *       {@code concurrency} binders, so up to {@code concurrency} binds are in flight while the next
 *       pods are filtered. When every binder is busy the cycle waits for one.</li>
 * </ul>
 *
 * <p>Warm-up ({@code --warmup-pods}): before the clock starts, that many pods go through the same
 * pattern against a second, throw-away extender over a cluster of the same size, so that the measured
 * run meets compiled code and not the JIT at work; the measured extender and its ledger start empty,
 * and the throw-away one is collected ({@link System#gc()}) before the clock starts.
 *
 * <pre>
 * java -XX:+UseParallelGC -Xmx3g -cp qgpu-kubernetes/scheduler-extender/target/qgpu-scheduler-extender.jar \
 *      io.qgpu.kubernetes.extender.LoadGenerator --pods 20000 --nodes 5000 --candidates 500 --max-seconds 60 \
 *      --warmup-pods 20000 --threads 0 --pattern scheduler --concurrency 64
 * </pre>
 *
 * <p>Pods and request bodies: see {@link LoadRequests} (the candidate windows are written before the
 * clock starts, as kube-scheduler builds its requests on its own machine).
 *
 * <p>Thread safety: a program entry point; {@link #run} is not meant to be called concurrently.
 */
public final class LoadGenerator {
    private static final String[] VERBS = {"filter", "prioritize", "bind"};

    /** How requests are sent; see the class comment. */
    public enum Pattern {
        /** {@code concurrency} pods in flight, each through all three verbs. */
        PODS,
        /** One scheduling cycle (filter, prioritize) at a time; up to {@code concurrency} binds in flight. */
        SCHEDULER;

        /** The pattern named on the command line ({@code pods} or {@code scheduler}). */
        static Pattern of(String name) {
            return switch (name) {
                case "pods" -> PODS;
                case "scheduler" -> SCHEDULER;
                default -> throw new io.qgpu.api.InvalidValueException("--pattern", name, "pods or scheduler");
            };
        }

        String wireName() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** The knobs; see the class comment. */
    public record Options(int pods, int nodes, int candidates, int concurrency, int maxSeconds, int serverThreads,
                          Pattern pattern, int warmupPods) {
        public Options {
            Validate.between("--pods", pods, 1, 10_000_000);
            Validate.between("--nodes", nodes, 1, 100_000);
            Validate.between("--candidates", candidates, 1, nodes);
            Validate.between("--concurrency", concurrency, 1, 4096);
            Validate.between("--max-seconds", maxSeconds, 1, 3600);
            Validate.between("--threads", serverThreads, 0, 1024);
            Validate.notNull("--pattern", pattern);
            Validate.between("--warmup-pods", warmupPods, 0, 10_000_000);
        }

        /** The {@link Pattern#PODS} pattern without warm-up. */
        public Options(int pods, int nodes, int candidates, int concurrency, int maxSeconds, int serverThreads) {
            this(pods, nodes, candidates, concurrency, maxSeconds, serverThreads, Pattern.PODS, 0);
        }
    }

    /** Latency of one verb, in milliseconds. */
    public record Latency(int calls, double p50, double p99, double max) {
    }

    /**
     * What a run did: pods scheduled (bound without error), pods that no node could take, bind
     * answers with an error, HTTP failures (status other than 200 or no answer), the latencies, how
     * many node checks of filter and prioritize the extender answered from its memo and how many the
     * engine computed, and the CPU time this JVM (extender and generator together) used during the
     * run ({@code NaN} where the JVM does not tell): on a shared machine, where pods per second move
     * with the other processes' load, the CPU per pod moves much less. {@code serverCpuSeconds}: the
     * part of it the extender's server threads used (its event loops: {@code qgpu-extender-*}), the
     * extender's own work with its sockets, without the
     * generator, the collector and the compiler ({@code NaN} where the JVM does not tell);
     * {@code serverKernelSeconds}: the part of that spent in the kernel (system time: the sockets);
     * {@code generatorCpuSeconds}: the part the generator's own threads used (the scheduling cycle or
     * the pods' drivers, and the binders: {@code qgpu-load*}), which on one machine the extender
     * shares its CPUs with ({@code NaN} where the JVM does not tell).
     */
    public record Report(int bound, int unschedulable, int bindErrors, int httpFailures, double seconds,
                         Map<String, Latency> latency, long memoHits, long memoMisses, double cpuSeconds,
                         double serverCpuSeconds, double serverKernelSeconds, double generatorCpuSeconds) {
        /** Bound pods per second of wall time. */
        public double podsPerSecond() {
            return bound / seconds;
        }
    }

    private LoadGenerator() {
    }

    public static void main(String[] argv) throws Exception {
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn"); // one INFO line per bind would be measured too
        }
        String usage = "usage: LoadGenerator [--pods N] [--nodes N] [--candidates N] [--concurrency N] [--max-seconds S] [--threads N]"
                + " [--pattern pods|scheduler] [--warmup-pods N]";
        Map<String, Integer> o = new LinkedHashMap<>(Map.of("pods", 20_000, "nodes", 5_000, "candidates", 500,
                "concurrency", 64, "max-seconds", 120, "threads", 8, "warmup-pods", 0));
        Pattern pattern = Pattern.PODS;
        for (int i = 0; i < argv.length; i++) {
            String name = argv[i].startsWith("--") ? argv[i].substring(2) : "";
            if ((!o.containsKey(name) && !name.equals("pattern")) || i + 1 >= argv.length) {
                System.err.println(usage);
                System.exit(2);
            }
            String value = argv[++i];
            try {
                if (name.equals("pattern")) {
                    pattern = Pattern.of(value);
                } else {
                    o.put(name, Integer.parseInt(value));
                }
            } catch (NumberFormatException e) {
                System.err.println("--" + name + " must be a whole number, was " + value);
                System.exit(2);
            } catch (io.qgpu.api.InvalidValueException e) {
                System.err.println(e.getMessage());
                System.exit(2);
            }
        }
        Options opts = new Options(o.get("pods"), o.get("nodes"), o.get("candidates"), o.get("concurrency"), o.get("max-seconds"),
                o.get("threads"), pattern, o.get("warmup-pods"));
        print(run(opts), opts, System.out);
    }

    /** Prints the report as a small table. */
    public static void print(Report r, Options o, PrintStream out) {
        out.printf(Locale.ROOT, "%d pods, %d nodes x 8 GPUs, %d candidates per pod, pattern %s, %d %s, %d server threads, %d CPUs, "
                        + "%d warm-up pods%n",
                o.pods(), o.nodes(), o.candidates(), o.pattern().wireName(), o.concurrency(),
                o.pattern() == Pattern.PODS ? "pods in flight" : "binds in flight", o.serverThreads(),
                Runtime.getRuntime().availableProcessors(), o.warmupPods());
        out.printf(Locale.ROOT, "bound %d, unschedulable %d, bind errors %d, HTTP failures %d in %.2f s: %.0f pods/s%n",
                r.bound(), r.unschedulable(), r.bindErrors(), r.httpFailures(), r.seconds(), r.podsPerSecond());
        out.printf(Locale.ROOT, "node checks: %d from the memo, %d by the engine (%.1f%% from the memo)%n", r.memoHits(), r.memoMisses(),
                100.0 * r.memoHits() / Math.max(1, r.memoHits() + r.memoMisses()));
        out.printf(Locale.ROOT, "CPU of this JVM (extender and generator) in the run: %.2f s, %.0f us per bound pod%n", r.cpuSeconds(),
                1e6 * r.cpuSeconds() / Math.max(1, r.bound()));
        out.printf(Locale.ROOT, "CPU of the extender's server threads in the run: %.2f s, %.0f us per bound pod (%.0f us of it in the kernel)%n",
                r.serverCpuSeconds(), 1e6 * r.serverCpuSeconds() / Math.max(1, r.bound()),
                1e6 * r.serverKernelSeconds() / Math.max(1, r.bound()));
        out.printf(Locale.ROOT, "CPU of the generator's threads in the run: %.2f s, %.0f us per bound pod%n",
                r.generatorCpuSeconds(), 1e6 * r.generatorCpuSeconds() / Math.max(1, r.bound()));
        r.latency().forEach((verb, l) -> out.printf(Locale.ROOT, "%-10s %7d calls  p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms%n",
                verb, l.calls(), l.p50(), l.p99(), l.max()));
    }

    /**
     * Warms up (when asked) against a throw-away extender, then starts the extender on loopback,
     * drives it, stops it, and reports.
     */
    public static Report run(Options o) throws IOException, InterruptedException {
        LoadRequests requests = new LoadRequests(o.nodes(), o.candidates());   // before the clock starts
        if (o.warmupPods() > 0) {
            Options warm = new Options(o.warmupPods(), o.nodes(), o.candidates(), o.concurrency(), o.maxSeconds(),
                    o.serverThreads(), o.pattern(), 0);
            measure(warm, requests);
            // the warm-up's extender and ledger are garbage now: collect them before the clock starts,
            // not in the measured run (with ParallelGC that was a full collection of about 240 ms in its
            // first second)
            System.gc();
        }
        return measure(o, requests);
    }

    /** One run against a new extender over an empty cluster of {@code o.nodes()} nodes. */
    private static Report measure(Options o, LoadRequests requests) throws IOException, InterruptedException {
        List<Node> nodes = new ArrayList<>(o.nodes());
        for (int i = 0; i < o.nodes(); i++) {
            nodes.add(h100(LoadRequests.nodeName(i)));
        }
        GpuExtender extender = new GpuExtender(Ledger.create(GranularityRules.ofDefaults(), nodes), PlacementConfig.defaults(),
                new DemoCluster());
        ExtenderServer server = ExtenderServer.builder(extender).host("127.0.0.1").port(0).urlPrefix("/qgpu")
                .threads(o.serverThreads()).build().start();
        Run run = new Run(o, server.address(), requests);
        long server1 = -1;
        long serverUser1 = -1;
        long cpu0 = processCpuNanos();
        long server0 = serverCpuNanos(false);
        long serverUser0 = serverCpuNanos(true);
        long t0 = System.nanoTime();
        long deadline = t0 + TimeUnit.SECONDS.toNanos(o.maxSeconds());
        try {
            int drivers = o.pattern() == Pattern.PODS ? o.concurrency() : 1;
            ExecutorService pool = daemons(drivers, "qgpu-load", run.generatorCpu);
            for (int i = 0; i < drivers; i++) {
                pool.execute(o.pattern() == Pattern.PODS ? () -> run.drive(deadline) : () -> run.cycle(deadline));
            }
            pool.shutdown();
            if (!pool.awaitTermination(o.maxSeconds() + 30L, TimeUnit.SECONDS)) {
                pool.shutdownNow();
            }
            server1 = serverCpuNanos(false);   // before the server's threads end
            serverUser1 = serverCpuNanos(true);
        } finally {
            server.stop();
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        long cpu1 = processCpuNanos();
        double cpuSeconds = cpu0 < 0 || cpu1 < 0 ? Double.NaN : (cpu1 - cpu0) / 1e9;
        double serverCpuSeconds = server0 < 0 || server1 < 0 ? Double.NaN : (server1 - server0) / 1e9;
        double serverKernelSeconds = serverUser0 < 0 || serverUser1 < 0 ? Double.NaN
                : serverCpuSeconds - (serverUser1 - serverUser0) / 1e9;
        Map<String, Latency> latency = new LinkedHashMap<>();
        for (int v = 0; v < VERBS.length; v++) {
            latency.put(VERBS[v], run.latency(v));
        }
        long[] memo = extender.checkCounts();
        return new Report(run.bound.get(), run.unschedulable.get(), run.bindErrors.get(), run.httpFailures.get(), seconds, latency,
                memo[0], memo[1], cpuSeconds, serverCpuSeconds, serverKernelSeconds,
                currentThreadCpuNanos() < 0 ? Double.NaN : run.generatorCpu.sum() / 1e9);
    }

    /** The CPU time this JVM has used, in nanoseconds, or -1 where the JVM does not tell. */
    private static long processCpuNanos() {
        return java.lang.management.ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os
                ? os.getProcessCpuTime() : -1;
    }

    /**
     * The CPU time the extender's server threads have used, in nanoseconds (the {@code qgpu-extender-}
     * threads of this JVM: {@link ExtenderServer}'s event loops; only the time in user mode when
     * {@code userOnly}), or
     * -1 where the JVM does not measure thread CPU time. Called while the measured server runs; the
     * warm-up's server has stopped by then, so its threads are not counted.
     */
    private static long serverCpuNanos(boolean userOnly) {
        java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
        if (!threads.isThreadCpuTimeSupported() || !threads.isThreadCpuTimeEnabled()) {
            return -1;
        }
        long total = 0;
        for (java.lang.management.ThreadInfo t : threads.getThreadInfo(threads.getAllThreadIds())) {
            if (t != null && t.getThreadName().startsWith("qgpu-extender-")) {
                long nanos = userOnly ? threads.getThreadUserTime(t.getThreadId()) : threads.getThreadCpuTime(t.getThreadId());
                total += Math.max(0, nanos);
            }
        }
        return total;
    }

    /** {@code n} daemon threads made by {@link #measured}. */
    private static ExecutorService daemons(int n, String name, LongAdder cpu) {
        return Executors.newFixedThreadPool(n, measured(name, cpu));
    }

    /**
     * Daemon threads named {@code name}, each of which adds the CPU time it used to {@code cpu} when it
     * ends (nothing where the JVM does not tell a thread's CPU time).
     */
    private static ThreadFactory measured(String name, LongAdder cpu) {
        return r -> {
            Thread t = new Thread(() -> {
                long c0 = currentThreadCpuNanos();
                try {
                    r.run();
                } finally {
                    long c1 = currentThreadCpuNanos();
                    if (c0 >= 0 && c1 >= 0) {
                        cpu.add(c1 - c0);
                    }
                }
            }, name);
            t.setDaemon(true);
            return t;
        };
    }

    private static long currentThreadCpuNanos() {
        java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
        return threads.isCurrentThreadCpuTimeSupported() && threads.isThreadCpuTimeEnabled() ? threads.getCurrentThreadCpuTime() : -1;
    }

    /** One run's shared state: the next pod, the counters and the latencies. */
    private static final class Run {
        final Options o;
        final InetSocketAddress address;
        final LoadRequests requests;
        final AtomicInteger next = new AtomicInteger();
        final AtomicInteger bound = new AtomicInteger();
        final AtomicInteger unschedulable = new AtomicInteger();
        final AtomicInteger bindErrors = new AtomicInteger();
        final AtomicInteger httpFailures = new AtomicInteger();
        final long[][] nanos;
        final AtomicInteger[] count = {new AtomicInteger(), new AtomicInteger(), new AtomicInteger()};
        /** The CPU time the generator's threads used, added by each as it ends. */
        final LongAdder generatorCpu = new LongAdder();

        /** Each verb's request line and headers up to the length's value. */
        final byte[][] heads = new byte[VERBS.length][];
        /** Each pod's JSON, made before the clock starts (kube-scheduler has its pods in memory). */
        final byte[][] pods;

        Run(Options o, InetSocketAddress address, LoadRequests requests) {
            this.o = o;
            this.address = address;
            this.requests = requests;
            this.nanos = new long[][] {new long[o.pods()], new long[o.pods()], new long[o.pods()]};
            for (int v = 0; v < VERBS.length; v++) {
                heads[v] = LoopbackClient.headPrefix("127.0.0.1:" + address.getPort(), "/qgpu/" + VERBS[v]);
            }
            this.pods = new byte[o.pods()][];
            for (int i = 0; i < pods.length; i++) {
                pods[i] = LoadRequests.pod(i);
            }
        }

        void drive(long deadline) {
            int i;
            try (LoopbackClient client = new LoopbackClient(address, 30_000)) {
                while ((i = next.getAndIncrement()) < o.pods() && System.nanoTime() < deadline) {
                    once(client, i);
                }
            }
        }

        /**
         * The {@link Pattern#SCHEDULER} pattern: filter and prioritize for one pod at a time on this
         * thread, each bind written on one of {@code concurrency} binders' connections and its answer
         * read by the binders' one reader thread ({@link LoopbackBinds}); waits for a free binder when
         * all are busy, and for every bind at the end.
         */
        void cycle(long deadline) {
            int i;
            try (LoopbackClient client = new LoopbackClient(address, 30_000);
                 LoopbackBinds binders = new LoopbackBinds(address, o.concurrency(), measured("qgpu-load-bind", generatorCpu))) {
                while ((i = next.getAndIncrement()) < o.pods() && System.nanoTime() < deadline) {
                    String best = scheduleCycle(client, i);
                    if (best != null) {
                        binders.post(heads[2], LoadRequests.binding(i, best), this::bound);   // waits while every binder is busy
                    }
                }
                if (!binders.awaitIdle(60, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("binds still unanswered 60 s after the last was sent");
                }
            } catch (IOException e) {
                httpFailures.incrementAndGet();   // the binders' connections could not be opened
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        /** A bind's answer, on the binders' reader thread: its latency recorded, the pod counted. */
        private void bound(LoopbackBinds.Answer a) {
            if (a.status() < 0) {
                httpFailures.incrementAndGet();
                return;
            }
            nanos[2][count[2].getAndIncrement()] = System.nanoTime() - a.sentNanos();
            try {
                if (a.status() != 200) {
                    httpFailures.incrementAndGet();
                } else if (LoadRequests.bindError(a.body()).isEmpty()) {
                    bound.incrementAndGet();
                } else {
                    bindErrors.incrementAndGet();
                }
            } catch (IOException | RuntimeException e) {
                httpFailures.incrementAndGet();
            }
        }

        /** Pod {@code i} through the three verbs on one connection; a failure is counted, never thrown. */
        private void once(LoopbackClient client, int i) {
            String best = scheduleCycle(client, i);
            if (best != null) {
                bindTo(client, i, best);
            }
        }

        /** Filter and prioritize for pod {@code i}: the best node, or null (counted) when none. */
        private String scheduleCycle(LoopbackClient client, int i) {
            try {
                byte[] pod = pods[i];
                byte[] filtered = call(client, 0, requests.filterParts(i, pod));
                if (filtered == null) {
                    return null;
                }
                byte[] fit = LoadRequests.fitNamesArray(filtered);
                if (fit == null) {
                    unschedulable.incrementAndGet();
                    return null;
                }
                byte[] scores = call(client, 1, LoadRequests.argsParts(pod, fit));
                return scores == null ? null : LoadRequests.best(scores);
            } catch (IOException | RuntimeException e) {
                httpFailures.incrementAndGet();
                client.close();   // the next request goes out on a new connection
                return null;
            }
        }

        /** Bind of pod {@code i} to {@code node}; a failure is counted, never thrown. */
        private void bindTo(LoopbackClient client, int i, String node) {
            try {
                byte[] b = call(client, 2, LoadRequests.binding(i, node));   // one part
                if (b == null) {
                    return;
                }
                if (LoadRequests.bindError(b).isEmpty()) {
                    bound.incrementAndGet();
                } else {
                    bindErrors.incrementAndGet();
                }
            } catch (IOException | RuntimeException e) {
                httpFailures.incrementAndGet();
                client.close();
            }
        }

        /** One POST of the body made of {@code body} in order; records its latency; null (and a failure counted) unless it answered 200. */
        private byte[] call(LoopbackClient client, int verb, byte[]... body) throws IOException {
            long t0 = System.nanoTime();
            LoopbackClient.Answer r = client.post(heads[verb], body);
            long took = System.nanoTime() - t0;
            nanos[verb][count[verb].getAndIncrement()] = took;
            if (r.status() != 200) {
                httpFailures.incrementAndGet();
                return null;
            }
            return r.body();
        }

        Latency latency(int verb) {
            int n = Math.min(count[verb].get(), nanos[verb].length);
            long[] a = Arrays.copyOf(nanos[verb], n);
            Arrays.sort(a);
            return n == 0 ? new Latency(0, 0, 0, 0)
                    : new Latency(n, ms(a[(n - 1) / 2]), ms(a[(int) Math.ceil(n * 0.99) - 1]), ms(a[n - 1]));
        }

        private static double ms(long nanos) {
            return nanos / 1e6;
        }
    }

    /** A node of 8 H100 80 GB, every pair linked through NVSwitch. */
    private static Node h100(String name) {
        Node.Builder b = Node.builder(name).label("gpu", "h100").defaultLink(new GpuLink.NvLink(18));
        for (int g = 0; g < 8; g++) {
            b.gpu(GpuDevice.builder(name + "-g" + g).index(g).model("NVIDIA H100 80GB HBM3").memoryGiB(80).build());
        }
        return b.build();
    }
}
