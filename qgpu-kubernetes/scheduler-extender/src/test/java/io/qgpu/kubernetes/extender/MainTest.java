package io.qgpu.kubernetes.extender;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
                .getMessage().contains("--port must be a number"));
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
        assertEquals(1, Main.run(new String[] {"--demo", "--inventory", bad.toString(), "--port", "0"}, System.out, e));
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

    @Test
    void syncTimeoutTakesTheOneDurationSyntax() {
        assertEquals("2s", Main.parse(new String[] {"--sync-timeout", "2s"}).get("sync-timeout"));
        IllegalArgumentException bare = assertThrows(IllegalArgumentException.class,
                () -> Main.parse(new String[] {"--sync-timeout", "60"}));
        assertTrue(bare.getMessage().startsWith("--sync-timeout = \"60\": must be a duration: a number and a unit"),
                bare.getMessage());
    }
}
