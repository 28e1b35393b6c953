package io.qgpu.kubernetes.dra;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.google.common.util.concurrent.ListenableFuture;
import io.qgpu.kubernetes.dra.pluginregistration.PluginInfo;
import io.qgpu.kubernetes.dra.v1.DRAPluginGrpc;
import io.qgpu.kubernetes.dra.v1.Device;
import io.qgpu.kubernetes.dra.v1.NodePrepareResourceResponse;
import io.qgpu.kubernetes.dra.v1.NodePrepareResourcesRequest;
import io.qgpu.kubernetes.dra.v1.NodePrepareResourcesResponse;
import io.qgpu.kubernetes.node.FakeNvmlControl;
import io.qgpu.kubernetes.node.dra.DraNames;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Item 5 with a real {@code kill -9}: the driver runs as a separate JVM ({@code java -cp <the test's class
 * path> io.qgpu.kubernetes.dra.Main} with the flags an operator gives: {@code --node-name}, {@code --kubeconfig}
 * naming fabric8's mock API server of this test, the registrar and plugins directories, {@code --cdi-root},
 * {@code --state-file}, {@code --nvml-lib} the fake NVML library, {@code --machine dgx-h100}), this test is
 * its kubelet over the real Unix sockets, and {@link Process#destroyForcibly()} kills it: on Linux that is
 * {@code SIGKILL}, and the test checks the exit status 137 (128 + 9). Nothing of the driver runs after that:
 * no shutdown hook, no socket clean-up, no pending write.
 *
 * <ul>
 *   <li>{@link #killedAfterItsAnswerTheRestartedDriverAnswersAsBeforeAndKeepsTheReservation}: claim A (a
 *       40 GiB / 40% share of gpu-0) is prepared and answered, then the driver is killed;</li>
 *   <li>{@link #killedAsSoonAsTheStateHoldsTheClaimTheRestartedDriverKeepsIt}: with A prepared, the prepare of
 *       claim B (30 GiB / 30% of the same GPU) is sent and the driver is killed the moment the state file on
 *       disk holds B's uid, whether or not the answer has arrived by then (the test does not depend on it:
 *       it checks the re-prepare against the answer when one came, else against the devices B must get). On
 *       disk this is the state of a kill at any point after the write, the window between the write and the
 *       answer included; {@link DurabilityTest} freezes exactly that window inside one JVM.</li>
 * </ul>
 *
 * <p>Then a new driver process starts on the same {@code --state-file} and directories, over the socket files
 * the killed one left behind: it must register again (its GetInfo answers), keep the CDI spec files of the
 * prepared claims byte for byte, answer the re-prepare of each exactly as before (same CDI ids, same
 * {@code share_id}), refuse a claim the kept reservations leave no room for and accept one that fits. An
 * unprepare of every claim removes their CDI specs; a {@code SIGTERM} then stops it (exit status 143) and it
 * removes its sockets.
 *
 * <p>Shown to catch a broken driver (checked by hand, then the code restored):
 * <ul>
 *   <li>{@code PreparedClaims.prepare} answering without saving (its {@code store.save} call removed): both
 *       tests fail. The first at the byte-for-byte check of A's spec with {@code NoSuchFileException}: the
 *       restarted driver knows no claim and removed A's spec as one "that was never answered"; the second
 *       with "the state file never held B".</li>
 *   <li>the save written behind the answer, on another thread 2 s later: the first test fails the same way
 *       (the kill after the answer lands before the write); the second passes, as it must, since it kills
 *       only once the write is on disk. Written behind by 200 ms, neither failed on the busy two-core build
 *       machine: a kill after the answer races the cold driver JVM's first answer, so the exact window
 *       belongs to {@link DurabilityTest}.</li>
 * </ul>
 *
 * <p>The driver's JVM gets {@code -XX:+UseSerialGC -XX:TieredStopAtLevel=1} (a quicker start on a small
 * machine; nothing the driver does depends on them) and, on JDK 22 and later, {@code
 * --enable-native-access=ALL-UNNAMED} for JNA. Its standard output and error go to files in the test's
 * temporary directory; they are copied to this test's output (surefire's {@code -output.txt}) when the
 * process is closed, and the tail of the error file is in the message of a failed start.
 */
class KillNineTest extends DriverTestBase {
    static final String SHARE_A = "aaaaaaaa-0000-0000-0000-00000000000a";
    static final String SHARE_B = "bbbbbbbb-0000-0000-0000-00000000000b";
    /** How long a driver process may take to answer GetInfo (a JVM start on a busy two-core machine). */
    static final long START_SECONDS = 60;
    /** Exit status of a process killed by SIGKILL. */
    static final int KILLED = 128 + 9;
    /** Exit status of a JVM stopped by SIGTERM. */
    static final int TERMINATED = 128 + 15;

    Path kubeconfig;
    int launched;

    @BeforeEach
    void kubeconfig() throws IOException {
        kubeconfig = writeKubeconfig();
    }

    @Test
    void killedAfterItsAnswerTheRestartedDriverAnswersAsBeforeAndKeepsTheReservation() throws Exception {
        String a = Claims.allocated(client, "a", Claims.share("gpu-0", "40Gi", "40", SHARE_A));
        DriverProcess first = launch();
        DRAPluginGrpc.DRAPluginBlockingStub stub = kubelet.v1(first.await());
        NodePrepareResourceResponse answerA = prepared(stub, "a", a);
        assertEquals(expected(a, SHARE_A), answerA);
        first.kill();

        Map<String, NodePrepareResourceResponse> answers = new LinkedHashMap<>();
        answers.put(a, answerA);
        // 80 GiB - 40 GiB leave 40 GiB on gpu-0
        restartAndCheck(answers, Map.of(a, "a"), "50Gi", "40Gi");
    }

    @Test
    void killedAsSoonAsTheStateHoldsTheClaimTheRestartedDriverKeepsIt() throws Exception {
        String a = Claims.allocated(client, "a", Claims.share("gpu-0", "40Gi", "40", SHARE_A));
        String b = Claims.allocated(client, "b", Claims.share("gpu-0", "30Gi", "30", SHARE_B));
        DriverProcess first = launch();
        PluginInfo info = first.await();
        NodePrepareResourceResponse answerA = prepared(kubelet.v1(info), "a", a);
        assertFalse(stateHolds(b));

        ListenableFuture<NodePrepareResourcesResponse> pending = DRAPluginGrpc.newFutureStub(kubelet.dial(Path.of(info.getEndpoint())))
                .withDeadlineAfter(Kubelet.DEADLINE_SECONDS, TimeUnit.SECONDS)
                .nodePrepareResources(NodePrepareResourcesRequest.newBuilder().addClaims(Kubelet.claim(Claims.NS, "b", b)).build());
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(Kubelet.DEADLINE_SECONDS);
        while (!stateHolds(b)) {
            assertTrue(first.process.isAlive(), () -> "the driver died before saving B\n" + first.tail());
            assertTrue(System.nanoTime() < deadline, () -> "the state file never held B\n" + first.tail());
            LockSupport.parkNanos(100_000);
        }
        first.kill();
        NodePrepareResourceResponse answerB;
        try {
            answerB = pending.get(Kubelet.DEADLINE_SECONDS, TimeUnit.SECONDS).getClaimsOrThrow(b);
            System.out.println("B's answer arrived before the kill");
        } catch (ExecutionException e) {
            answerB = expected(b, SHARE_B);
            System.out.println("B's answer did not arrive before the kill: " + e.getCause());
        }
        assertEquals(expected(b, SHARE_B), answerB);

        Map<String, NodePrepareResourceResponse> answers = new LinkedHashMap<>();
        answers.put(a, answerA);
        answers.put(b, answerB);
        // 80 GiB - 40 GiB - 30 GiB leave 10 GiB on gpu-0
        restartAndCheck(answers, Map.of(a, "a", b, "b"), "20Gi", "10Gi");
    }

    /**
     * Starts a new driver process on the same state file and directories as the killed one, and checks that it
     * keeps the claims answered (or saved) before the kill.
     */
    private void restartAndCheck(Map<String, NodePrepareResourceResponse> answers, Map<String, String> names, String tooBig, String fits)
            throws Exception {
        // a claim killed after its save and before its spec has no spec yet: the restarted driver's first pass writes it
        Map<String, byte[]> specs = new LinkedHashMap<>();
        for (String uid : answers.keySet()) {
            if (Files.exists(spec(uid))) {
                specs.put(uid, Files.readAllBytes(spec(uid)));
            }
        }
        DriverProcess second = launch();
        DRAPluginGrpc.DRAPluginBlockingStub stub = kubelet.v1(second.await());
        for (String uid : answers.keySet()) {
            assertTrue(Files.exists(spec(uid)), "the CDI spec of " + names.get(uid) + " is there once the restarted driver serves");
            specs.putIfAbsent(uid, Files.readAllBytes(spec(uid)));
            assertArrayEquals(specs.get(uid), Files.readAllBytes(spec(uid)), "the CDI spec of " + names.get(uid) + " is kept as it was");
            assertEquals(answers.get(uid), prepared(stub, names.get(uid), uid), "the re-prepare of " + names.get(uid) + " answers as before");
            assertArrayEquals(specs.get(uid), Files.readAllBytes(spec(uid)), "the re-prepare of " + names.get(uid) + " rewrote nothing");
        }
        String big = Claims.allocated(client, "big", Claims.share("gpu-0", tooBig, "20", null));
        String e = Kubelet.prepare(stub, Kubelet.claim(Claims.NS, "big", big)).getClaimsOrThrow(big).getError();
        assertTrue(e.contains("does not fit"), tooBig + " must not fit next to the kept reservations: " + e);
        assertFalse(Files.exists(spec(big)));
        String small = Claims.allocated(client, "small", Claims.share("gpu-0", fits, "5", null));
        prepared(stub, "small", small);

        names.forEach((uid, name) -> assertEquals("",
                Kubelet.unprepare(stub, Kubelet.claim(Claims.NS, name, uid)).getClaimsOrThrow(uid).getError()));
        assertEquals("", Kubelet.unprepare(stub, Kubelet.claim(Claims.NS, "small", small)).getClaimsOrThrow(small).getError());
        try (var left = Files.list(cdi)) {
            assertEquals(List.of(), left.toList(), "every CDI spec is removed");
        }
        second.stop();
    }

    /** Prepares one claim and returns its answer, which must be no error. */
    private static NodePrepareResourceResponse prepared(DRAPluginGrpc.DRAPluginBlockingStub stub, String name, String uid) {
        NodePrepareResourceResponse r = Kubelet.prepare(stub, Kubelet.claim(Claims.NS, name, uid)).getClaimsOrThrow(uid);
        assertEquals("", r.getError(), name);
        return r;
    }

    /** The answer to a share of gpu-0 requested as {@code gpu}. */
    private static NodePrepareResourceResponse expected(String uid, String shareId) {
        return NodePrepareResourceResponse.newBuilder().addDevices(Device.newBuilder().addRequestNames("gpu").setPoolName("node-a")
                .setDeviceName("gpu-0").addCdiDeviceIds("qgpu.io/gpu=" + uid + "-gpu-0").setShareId(shareId)).build();
    }

    private Path spec(String uid) {
        return cdi.resolve("qgpu.io-gpu_" + uid + ".json");
    }

    private boolean stateHolds(String uid) throws IOException {
        try {
            return Files.readString(state).contains(uid);
        } catch (NoSuchFileException e) {
            return false;
        }
    }

    /** Starts the driver in a JVM of its own; it is killed after the test at the latest. */
    private DriverProcess launch() throws IOException {
        int n = ++launched;
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-XX:+UseSerialGC");
        cmd.add("-XX:TieredStopAtLevel=1");
        if (Runtime.version().feature() >= 22) {
            cmd.add("--enable-native-access=ALL-UNNAMED");
        }
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), Main.class.getName(),
                "--node-name", "node-a", "--kubeconfig", kubeconfig.toString(),
                "--kubelet-registrar-directory-path", registrar.toString(), "--kubelet-plugins-directory-path", plugins.toString(),
                "--cdi-root", cdi.toString(), "--state-file", state.toString(),
                "--nvml-lib", FakeNvmlControl.path().toString(), "--machine", "dgx-h100"));
        Path out = tmp.resolve("driver-" + n + ".out");
        Path err = tmp.resolve("driver-" + n + ".err");
        Process p = new ProcessBuilder(cmd).directory(tmp.toFile())
                .redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        DriverProcess d = new DriverProcess(n, p, out, err);
        open.add(d);
        return d;
    }

    /** A driver process: its output files, and the ways it ends. */
    final class DriverProcess implements AutoCloseable {
        final int n;
        final Process process;
        final Path out;
        final Path err;

        DriverProcess(int n, Process process, Path out, Path err) {
            this.n = n;
            this.process = process;
            this.out = out;
            this.err = err;
        }

        /** Waits until the registration socket answers GetInfo, then registers as the kubelet does. */
        PluginInfo await() throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(START_SECONDS);
            while (true) {
                if (!process.isAlive()) {
                    fail("driver " + n + " exited with " + process.exitValue() + " before answering GetInfo\n" + tail());
                }
                Optional<PluginInfo> info = kubelet.probe(registrar, 5);
                if (info.isPresent()) {
                    assertEquals(plugins.resolve(DraNames.DRIVER).resolve(DriverNames.DRA_SOCKET).toAbsolutePath().toString(),
                            info.get().getEndpoint());
                    return register();
                }
                if (System.nanoTime() > deadline) {
                    fail("driver " + n + " did not answer GetInfo within " + START_SECONDS + " s\n" + tail());
                }
                Thread.sleep(50); // polls for readiness only
            }
        }

        /** kill -9: SIGKILL, exit status 137; its socket files stay behind. */
        void kill() throws InterruptedException {
            process.destroyForcibly();
            assertTrue(process.waitFor(Kubelet.DEADLINE_SECONDS, TimeUnit.SECONDS), "driver " + n + " did not die");
            assertEquals(KILLED, process.exitValue(), "driver " + n + " was killed by SIGKILL");
            assertTrue(Files.exists(registrar.resolve(DriverNames.REGISTRATION_SOCKET)), "the killed driver left its registration socket");
            assertTrue(Files.exists(plugins.resolve(DraNames.DRIVER).resolve(DriverNames.DRA_SOCKET)), "the killed driver left its DRA socket");
        }

        /** SIGTERM: the driver stops, exit status 143, and removes its sockets. */
        void stop() throws InterruptedException {
            process.destroy();
            assertTrue(process.waitFor(Kubelet.DEADLINE_SECONDS, TimeUnit.SECONDS), "driver " + n + " did not stop on SIGTERM\n" + tail());
            assertEquals(TERMINATED, process.exitValue(), "driver " + n + " stopped by SIGTERM\n" + tail());
            assertFalse(Files.exists(registrar.resolve(DriverNames.REGISTRATION_SOCKET)), "the stopped driver removed its registration socket");
            assertFalse(Files.exists(plugins.resolve(DraNames.DRIVER).resolve(DriverNames.DRA_SOCKET)), "the stopped driver removed its DRA socket");
        }

        /** The last lines of its standard error. */
        String tail() {
            try {
                String s = Files.readString(err);
                return "--- driver " + n + " stderr (" + err + ") ---\n" + s.substring(Math.max(0, s.length() - 4000));
            } catch (IOException e) {
                return "(stderr of driver " + n + " unreadable: " + e.getMessage() + ")";
            }
        }

        /** Kills it if it still runs, then copies its output to the test's output. */
        @Override
        public void close() throws Exception {
            process.destroyForcibly();
            process.waitFor(Kubelet.DEADLINE_SECONDS, TimeUnit.SECONDS);
            System.out.println("--- driver " + n + " stdout ---\n" + Files.readString(out) + tail());
        }
    }
}
