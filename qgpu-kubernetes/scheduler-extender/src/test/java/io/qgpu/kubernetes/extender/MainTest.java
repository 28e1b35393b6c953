package io.qgpu.kubernetes.extender;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The documented command lines: options and demo mode (the Kubernetes mode is in {@link KubernetesBindTest}). */
class MainTest {

    @TempDir
    Path dir;

    @Test
    void options() {
        Map<String, String> o = Main.parse(new String[] {"--demo", "--inventory", "inv.json", "--port=0", "--url-prefix", "/x"});
        assertEquals(Map.of("demo", "true", "inventory", "inv.json", "port", "0", "url-prefix", "/x"), o);
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Main.parse(new String[] {"--colour"}))
                .getMessage().contains("unknown option --colour"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Main.parse(new String[] {"--port"}))
                .getMessage().contains("--port needs a value"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Main.parse(new String[] {"--port", "http"}))
                .getMessage().equals("--port http: must be a whole number between 0 and 65535"));
    }

    @Test
    void badUsageAndBadFilesExitNonZeroWithAMessage() throws Exception {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8);
        assertEquals(2, Main.run(new String[] {"--bogus"}, System.out, e));
        assertEquals(2, Main.run(new String[] {"--demo"}, System.out, e));
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("--demo needs --inventory FILE"), err.toString(StandardCharsets.UTF_8));
        Path bad = dir.resolve("bad.json");
        Files.writeString(bad, "{\"nodes\": [{\"name\": \"n\", \"gpus\": [{\"uuid\": \"g\"}]}]}");
        assertEquals(2, Main.run(new String[] {"--demo", "--inventory", bad.toString(), "--port", "0"}, System.out, e));
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("index"), err.toString(StandardCharsets.UTF_8));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        assertEquals(0, Main.run(new String[] {"--help"}, new PrintStream(out, true, StandardCharsets.UTF_8), e));
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("--url-prefix"));
    }

    @Test
    void demoModeServesTheStaticInventory() throws Exception {
        Path inv = dir.resolve("inventory.json");
        Files.write(inv, TestSupport.resource("inventory.json"));
        try (Main.Running r = Main.start(Main.parse(new String[] {"--demo", "--inventory", inv.toString(), "--host", "127.0.0.1",
                "--port", "0", "--node-policy", "spread"}))) {
            String url = r.server().baseUrl();
            assertTrue(url.endsWith("/qgpu"), url);
            var f = TestSupport.post(url + "/filter", TestSupport.payload("filter-names-infer.json"));
            assertEquals(200, f.statusCode(), f.body());
            assertEquals("", TestSupport.tree(TestSupport.post(url + "/bind", TestSupport.payload("bind-infer.json")).body())
                    .get("Error").asText());
            assertTrue(r.extender().ledger().placement("team-a/infer-0").isPresent());
            var view = TestSupport.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(url + "/ledger")).GET().build());
            assertTrue(view.body().contains("team-a/infer-0"), view.body());
        }
    }

    @Test
    void listensOnLoopbackUnlessGivenAHost() throws Exception {
        Path inv = dir.resolve("inventory.json");
        Files.write(inv, TestSupport.resource("inventory.json"));
        try (Main.Running r = Main.start(Main.parse(new String[] {"--demo", "--inventory", inv.toString(), "--port", "0"}))) {
            assertTrue(r.server().address().getAddress().isLoopbackAddress(), r.server().address().toString());
        }
        try (Main.Running r = Main.start(Main.parse(new String[] {"--demo", "--inventory", inv.toString(), "--port", "0",
                "--host", "0.0.0.0"}))) {
            assertTrue(r.server().address().getAddress().isAnyLocalAddress(), r.server().address().toString());
        }
    }

    record Run(int rc, String err) {
    }

    private Run run(String... args) throws Exception {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = Main.run(args, new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(rc, err.toString(StandardCharsets.UTF_8));
    }

    /** Issue 30: each bad value is one line naming the flag as written and the value, exit code 2, no internal name. */
    @Test
    void badValuesAreOneLineNamingTheFlagWithTheRange() throws Exception {
        Path inv = dir.resolve("inventory.json");
        Files.write(inv, TestSupport.resource("inventory.json"));
        String[][] cases = {
            {"--port", "70000", "--port 70000: must be a whole number between 0 and 65535"},
            {"--port", "-1", "--port -1: must be a whole number between 0 and 65535"},
            {"--max-body-bytes", "-5", "--max-body-bytes -5: must be a whole number between 1024 and 2147467263"},
            {"--threads", "-1", "--threads -1: must be a whole number between 0 and 1024"},
            {"--threads", "99999999999", "--threads 99999999999: must be a whole number between 0 and 1024"},
            {"--threads", "1.6e1", "--threads 1.6e1: must be a whole number between 0 and 1024"},
            {"--worker-threads", "0", "--worker-threads 0: must be a whole number between 1 and 1024"},
        };
        for (String[] c : cases) {
            Run r = run("--demo", "--inventory", inv.toString(), c[0], c[1]);
            assertEquals(2, r.rc(), r.err());
            assertEquals("qgpu-scheduler-extender: " + c[2] + "\n", r.err(), "one line, no usage text");
            assertFalse(r.err().contains("server."), r.err());
        }
        Run host = run("--demo", "--inventory", inv.toString(), "--host", "no.such.host.invalid", "--port", "0");
        assertEquals(2, host.rc());
        assertEquals("qgpu-scheduler-extender: --host no.such.host.invalid: not an address, nor a host name this machine can resolve\n",
                host.err());
    }

    @Test
    void aPortInUseIsOneLineNamingTheAddress() throws Exception {
        Path inv = dir.resolve("inventory.json");
        Files.write(inv, TestSupport.resource("inventory.json"));
        try (java.net.ServerSocket taken = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            int port = taken.getLocalPort();
            Run r = run("--demo", "--inventory", inv.toString(), "--host", "127.0.0.1", "--port", String.valueOf(port));
            assertEquals(2, r.rc(), r.err());
            assertEquals(1, r.err().lines().count(), r.err());
            assertTrue(r.err().startsWith("qgpu-scheduler-extender: --host 127.0.0.1 --port " + port + ": cannot listen on 127.0.0.1:"
                    + port + " (address already in use)"), r.err());
        }
    }

    /** Main's ranges are the server builder's: each bound passes it and one past each bound is refused. */
    @Test
    void theFlagRangesAreTheServersOwn() {
        Extender none = (Extender) java.lang.reflect.Proxy.newProxyInstance(Extender.class.getClassLoader(), new Class<?>[] {Extender.class},
                (proxy, method, args) -> {
                    throw new UnsupportedOperationException(method.getName());
                });
        ExtenderServer.Builder b = ExtenderServer.builder(none);
        Map<String, java.util.function.IntConsumer> setters = Map.of("port", b::port, "max-body-bytes", b::maxBodyBytes, "threads", b::threads,
                "worker-threads", b::workerThreads);
        for (Map.Entry<String, long[]> r : Main.RANGES.entrySet()) {
            java.util.function.IntConsumer set = setters.get(r.getKey());
            set.accept((int) r.getValue()[0]);
            set.accept((int) r.getValue()[1]);
            assertThrows(io.qgpu.api.InvalidValueException.class, () -> set.accept((int) r.getValue()[0] - 1), r.getKey());
            assertThrows(io.qgpu.api.InvalidValueException.class, () -> set.accept((int) r.getValue()[1] + 1), r.getKey());
        }
    }

    @Test
    void syncTimeoutTakesTheOneDurationSyntax() {
        assertEquals("2s", Main.parse(new String[] {"--sync-timeout", "2s"}).get("sync-timeout"));
        IllegalArgumentException bare = assertThrows(IllegalArgumentException.class,
                () -> Main.parse(new String[] {"--sync-timeout", "60"}));
        assertTrue(bare.getMessage().startsWith("--sync-timeout = \"60\": must be a duration: a number and a unit"),
                bare.getMessage());
    }

    // ---- issue 41 item 3: the extender fails fast and says why ----

    /** A kubeconfig whose cluster is {@code server}, with a token and TLS checks off. */
    private Path kubeconfig(String server) throws Exception {
        return Files.writeString(Files.createTempFile(dir, "kubeconfig", ".yaml"), """
                apiVersion: v1
                kind: Config
                clusters:
                - name: c
                  cluster: {server: "%s", insecure-skip-tls-verify: true}
                contexts:
                - name: c
                  context: {cluster: c, user: u, namespace: default}
                current-context: c
                users:
                - name: u
                  user: {token: not-a-token}
                """.formatted(server));
    }

    private static int closedPort() throws Exception {
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    @Test
    void aRulesNameThatIsNoPresetIsRefusedInEveryMode() throws Exception {
        Path inv = dir.resolve("inventory.json");
        Files.write(inv, TestSupport.resource("inventory.json"));
        for (String[] args : new String[][] {{"--rules", "nope"}, {"--demo", "--inventory", inv.toString(), "--rules", "nope"}}) {
            Run r = run(args);
            assertEquals(2, r.rc(), r.err());
            assertEquals("qgpu-scheduler-extender: --rules nope: must be qgpu, hami or gpu-manager\n", r.err(), "one line, no usage text");
        }
    }

    @Test
    void anApiServerThatCannotBeReachedIsOneLineWithItsUrlAndCauseWithinTheTimeout() throws Exception {
        int port = closedPort();
        Path closed = kubeconfig("https://127.0.0.1:" + port);
        long t0 = System.nanoTime();
        Run r = run("--kubeconfig", closed.toString(), "--port", "0");
        assertEquals(2, r.rc(), r.err());
        assertEquals("qgpu-scheduler-extender: --kubeconfig " + closed + ": the Kubernetes API server https://127.0.0.1:" + port
                + "/: connection refused\n", r.err());
        String host = "qgpu-no-such-api-server.invalid";
        Path unknown = kubeconfig("https://" + host + ":6443");
        Run u = run("--kubeconfig", unknown.toString(), "--port", "0", "--api-timeout", "5s");
        assertEquals(2, u.rc(), u.err());
        assertEquals("qgpu-scheduler-extender: --kubeconfig " + unknown + ": the Kubernetes API server https://" + host
                + ":6443/: unknown host " + host + "\n", u.err());
        assertTrue(System.nanoTime() - t0 < java.util.concurrent.TimeUnit.SECONDS.toNanos(15), "within the timeouts, not after 60 s");
        try (java.net.ServerSocket silent = new java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress())) {
            Path k = kubeconfig("https://127.0.0.1:" + silent.getLocalPort());
            Run s = run("--kubeconfig", k.toString(), "--port", "0", "--api-timeout", "500ms");
            assertEquals(2, s.rc(), s.err());
            assertEquals("qgpu-scheduler-extender: --kubeconfig " + k + ": the Kubernetes API server https://127.0.0.1:"
                    + silent.getLocalPort() + "/: no answer within 500ms (--api-timeout)\n", s.err());
        }
    }

    @Test
    void credentialsTheServerRefusesAreNamedWithTheCode() throws Exception {
        io.fabric8.kubernetes.client.server.mock.KubernetesMockServer server =
                new io.fabric8.kubernetes.client.server.mock.KubernetesMockServer(false);
        server.expect().get().withPath("/version").andReturn(401, "{\"kind\":\"Status\",\"code\":401}").always();
        server.init();
        try {
            String url = server.url("/").replaceAll("/$", "");
            Path k = kubeconfig(url);
            Run r = run("--kubeconfig", k.toString(), "--port", "0");
            assertEquals(2, r.rc(), r.err());
            assertEquals("qgpu-scheduler-extender: --kubeconfig " + k + ": the Kubernetes API server " + url + "/: 401 Unauthorized: the"
                    + " credentials of the kubeconfig (or the pod's service account) were refused\n", r.err());
        } finally {
            server.destroy();
        }
    }

    @Test
    void apiTimeoutTakesTheDurationSyntaxAndNotDemo() throws Exception {
        assertEquals("qgpu-scheduler-extender: --api-timeout = \"10\": must be a duration: a number and a unit: ns, us, ms, s or m"
                + " (for example \"250ms\", \"1.5s\", \"40us\", \"2m\")\n", run("--api-timeout", "10").err());
        assertEquals("qgpu-scheduler-extender: --api-timeout 0s: must be above 0\n", run("--api-timeout", "0s").err());
        Run demo = run("--demo", "--inventory", "x.json", "--api-timeout", "5s");
        assertEquals(2, demo.rc());
        assertEquals("qgpu-scheduler-extender: --api-timeout 5s: not with --demo (no Kubernetes API)\n", demo.err());
    }
}
