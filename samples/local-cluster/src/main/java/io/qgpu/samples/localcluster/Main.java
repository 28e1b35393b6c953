package io.qgpu.samples.localcluster;

import io.qgpu.kubernetes.node.dra.DraNames;
import io.qgpu.kubernetes.node.sharing.SharingBackend;
import java.io.PrintStream;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * {@code ./qgpu-local-cluster [--dra-machine NAME] [--dp-machine NAME] [--sharing none|hami-core] [--nvml-lib PATH] [--keep]}: starts a {@link LocalCluster}
 * (mock API server, stand-in kubelet, extender, DRA driver, DRA allocator, device plugin, all on the fake NVML
 * library), walks pods down the DRA path (allocated by the DRA allocator) and one down the device-plugin path
 * ({@link Walk}), prints each step and the containers' environments, and stops it all (exit 0); with {@code --keep}
 * it stays up, printing the URLs, until Ctrl-C. Exit codes: 0 done, 1 a step failed, 2 bad usage.
 *
 * <p>Thread safety: {@link #run} is for one thread at a time (it sets logging properties of the JVM).
 */
public final class Main {
    static final String USAGE = """
            usage: qgpu-local-cluster [--dra-machine NAME] [--dp-machine NAME] [--machine NAME] [--sharing none|hami-core]
                                      [--nvml-lib PATH] [--keep] [--verbose]
              --dra-machine NAME  the fake machine the DRA driver's node (gpu-dra) plays (default dgx-h100)
              --dp-machine NAME   the fake machine the device plugin's node (gpu-dp) plays (default t4x4)
              --machine NAME   both: dgx-h100, t4x4, a100-bridged, a100-mig, x86-numa, h100-vm
              --sharing B      the agents' sharing back end: hami-core (default; a placeholder libvgpu.so, so the
                               containers get HAMi-core's environment and mounts) or none (QGPU_* only)
              --nvml-lib PATH  the fake libnvidia-ml.so.1 (default: the one the build compiled, target/fake-nvml)
              --keep           leave the cluster running after the walks, with its URLs printed, until Ctrl-C
              --verbose        the agents' own logs (INFO) on standard error""";

    /** Held, so that its level stays set (java.util.logging keeps loggers weakly). */
    private static final java.util.logging.Logger MOCK_LOG = java.util.logging.Logger.getLogger("io.fabric8.mockwebserver");

    private Main() {
    }

    public static void main(String[] argv) {
        int rc = run(argv, System.out, System.err);
        System.exit(rc);
    }

    /** Runs the walks (and with {@code --keep} waits for Ctrl-C); returns the exit code. */
    public static int run(String[] argv, PrintStream out, PrintStream err) {
        return run(argv, out, err, (cluster, walks) -> {
        });
    }

    /** What the walks came to: each started container's environment, by pod name. */
    record Walks(Map<String, Map<String, String>> dra, Map<String, String> devicePlugin) {
    }

    /** Looks at the cluster after the walks, before it stops (the end-to-end test reads the API server here). */
    @FunctionalInterface
    interface AfterWalks {
        void accept(LocalCluster cluster, Walks walks) throws Exception;
    }

    /** As {@link #run(String[], PrintStream, PrintStream)}, with {@code after} called once the walks are done. */
    static int run(String[] argv, PrintStream out, PrintStream err, AfterWalks after) {
        String draMachine = "dgx-h100";
        String dpMachine = "t4x4";
        SharingBackend sharing = SharingBackend.HAMI_CORE;
        Path lib = null;
        boolean keep = false;
        boolean verbose = false;
        for (int i = 0; i < argv.length; i++) {
            String a = argv[i];
            String value = null;
            int eq = a.indexOf('=');
            if (a.startsWith("--") && eq > 0) {
                value = a.substring(eq + 1);
                a = a.substring(0, eq);
            }
            switch (a) {
                case "--machine", "--dra-machine", "--dp-machine", "--sharing", "--nvml-lib" -> {
                    if (value == null) {
                        if (i + 1 >= argv.length) {
                            err.println("qgpu-local-cluster: " + a + " needs a value");
                            return 2;
                        }
                        value = argv[++i];
                    }
                    switch (a) {
                        case "--machine" -> {
                            draMachine = value;
                            dpMachine = value;
                        }
                        case "--dra-machine" -> draMachine = value;
                        case "--dp-machine" -> dpMachine = value;
                        case "--sharing" -> {
                            try {
                                sharing = SharingBackend.parse(value);
                            } catch (RuntimeException e) {
                                err.println("qgpu-local-cluster: --sharing " + value + ": none or hami-core");
                                return 2;
                            }
                        }
                        default -> lib = Path.of(value);
                    }
                }
                case "--keep" -> keep = true;
                case "--verbose" -> verbose = true;
                case "--help", "-h" -> {
                    out.println(USAGE);
                    return 0;
                }
                default -> {
                    err.println("qgpu-local-cluster: unknown option " + argv[i]);
                    err.println(USAGE);
                    return 2;
                }
            }
        }
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            // the agents log every start-up step at INFO: quiet unless asked (set before any logger exists)
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", verbose ? "info" : "warn");
            // grpc-netty's epoll transport warns of an option Unix sockets do not have, once per channel
            System.setProperty("org.slf4j.simpleLogger.log.io.grpc.netty.shaded.io.netty.bootstrap", "error");
        }
        if (!verbose) {
            // the mock API server logs every request through java.util.logging
            MOCK_LOG.setLevel(java.util.logging.Level.WARNING);
        }
        if (lib == null) {
            lib = defaultFakeNvml();
            if (lib == null) {
                err.println("qgpu-local-cluster: the fake NVML library was not found; build it with"
                        + " ./mvnw -q -B -DskipTests -pl samples/local-cluster -am package, or give --nvml-lib PATH");
                return 2;
            }
        }

        long t0 = System.nanoTime();
        CountDownLatch closed = new CountDownLatch(1);
        out.println("qgpu local cluster: starting (fake NVML: " + LocalCluster.DRA_NODE + " plays " + draMachine + ", "
                + LocalCluster.DEVICE_PLUGIN_NODE + " plays " + dpMachine + "; sharing " + sharing.wireName() + ")");
        try (LocalCluster cluster = LocalCluster.start(new LocalCluster.Options(lib.toAbsolutePath(), draMachine, dpMachine, sharing))) {
            out.println("  API server      " + cluster.apiServerUrl() + "  (fabric8 mock, CRUD; kubeconfig " + cluster.kubeconfig() + ")");
            out.println("  extender        " + cluster.extenderUrl() + "/{filter,prioritize,bind,preempt}, " + cluster.extenderUrl() + "/ledger");
            out.println("  kubelet         " + cluster.kubelet().kubeletSocket() + "  (stand-in: device-plugin registration; DRA plugin watcher)");
            out.println("  DRA driver      node " + LocalCluster.DRA_NODE + ", registered " + cluster.draInfo().getName() + " at "
                    + cluster.draInfo().getEndpoint());
            out.println("  DRA allocator   " + String.join(" ", LocalCluster.ALLOCATOR_FLAGS) + ", class "
                    + String.join(", ", cluster.allocatorFlags().deviceClasses()) + ", policy " + cluster.allocatorFlags().policy().wireName()
                    + "  (its webhook's answer is called by the walk; no kube-scheduler: the walk plays its part)");
            out.println("  device plugin   node " + LocalCluster.DEVICE_PLUGIN_NODE + ", registered "
                    + cluster.devicePluginRegistration().getResourceName() + " at " + cluster.devicePluginRegistration().getEndpoint());
            Walk walk = new Walk(cluster, out);
            Map<String, Map<String, String>> dra = walk.dra();
            Map<String, String> dp = walk.devicePlugin();
            out.println();
            List<String> draSees = new ArrayList<>();
            dra.forEach((pod, env) -> draSees.add(pod + " " + env.get("NVIDIA_VISIBLE_DEVICES")));
            out.printf("done in %.1f s: DRA containers see %s; device-plugin container sees %s%n", (System.nanoTime() - t0) / 1e9,
                    String.join(", ", draSees), dp.get("NVIDIA_VISIBLE_DEVICES"));
            after.accept(cluster, new Walks(dra, dp));
            if (keep) {
                printKeep(cluster, out);
                CountDownLatch stop = new CountDownLatch(1);
                // Ctrl-C: the hook lets this thread close the cluster (and remove its directory) before the JVM halts
                Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                    stop.countDown();
                    try {
                        closed.await(20, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }, "qgpu-local-cluster-stop"));
                stop.await();
                out.println("stopping");
            }
            return 0;
        } catch (IllegalArgumentException e) {
            err.println("qgpu-local-cluster: " + e.getMessage());
            return 2;
        } catch (Exception e) {
            err.println("qgpu-local-cluster: failed: " + e);
            if (verbose) {
                e.printStackTrace(err);
            }
            return 1;
        } finally {
            closed.countDown();
        }
    }

    private static void printKeep(LocalCluster c, PrintStream out) {
        String api = c.apiServerUrl().replaceAll("/$", "");
        out.println();
        out.println("kept running (Ctrl-C stops it and removes " + c.workDirectory() + "). Try:");
        out.println("  curl -s " + api + "/api/v1/namespaces/default/pods | jq '.items[] | {name: .metadata.name, node: .spec.nodeName,"
                + " gates: .spec.schedulingGates, annotations: .metadata.annotations}'");
        out.println("  curl -s " + api + "/apis/resource.k8s.io/v1/resourceslices");
        out.println("  curl -s " + api + "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims | jq '.items[] | {name: .metadata.name,"
                + " finalizers: .metadata.finalizers, allocation: .status.allocation.devices.results, reservedFor: .status.reservedFor}'");
        out.println("  curl -s " + api + "/api/v1/namespaces/default/events | jq '.items[] | {pod: .involvedObject.name, reason, message}'");
        out.println("  curl -s " + c.extenderUrl() + "/ledger");
        out.println("  KUBECONFIG=" + c.kubeconfig() + "   for a client of your own (the mock answers what fabric8's CRUD mode"
                + " does: no field selectors, no admission)");
        out.println("  the DRA allocator keeps running: a pod you create with the gate " + DraNames.SCHEDULING_GATE
                + " and a claim of class " + String.join(", ", c.allocatorFlags().deviceClasses()) + " is allocated (no kube-scheduler binds it)");
        out.println("  the CDI specs: " + c.cdiRoot());
    }

    /** {@code target/fake-nvml/libnvidia-ml.so.1} beside this jar (or class directory), or where the test's property says. */
    static Path defaultFakeNvml() {
        String dir = System.getProperty("qgpu.fakeNvml.dir");
        if (dir != null) {
            return Path.of(dir, "libnvidia-ml.so.1");
        }
        try {
            Path here = Path.of(Main.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            Path p = here.getParent().resolve("fake-nvml").resolve("libnvidia-ml.so.1");
            return Files.isRegularFile(p) ? p : null;
        } catch (URISyntaxException | RuntimeException e) {
            return null;
        }
    }
}
