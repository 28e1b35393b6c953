package io.qgpu.kubernetes.deviceplugin;

import static io.qgpu.kubernetes.deviceplugin.LifecycleTest.uuidOf;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.kubernetes.node.mps.FakeMpsControlScript;
import io.qgpu.kubernetes.node.mps.MpsLayout;
import io.qgpu.kubernetes.node.sharing.SharingOptions;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Start-up and shutdown close exactly what they opened, newest first: a start that fails after the NVML
 * session, the MPS supervisor and the health watch are open (the plugin directory is a regular file; the
 * plugin's socket path is taken by a directory, so the server fails after its event loops and directory watch
 * are open) leaves no NVML session, no socket and no thread of the plugin; a close after a start closes
 * everything, and a second close does nothing. The MPS daemons are the node's, not the plugin's: neither a failed
 * start nor a close quits them (issue 38; before, both did).
 */
class PluginStartFailureTest extends PluginTestBase {
    FakeMpsControlScript fake;
    MpsLayout layout;
    final List<String> gpus = new ArrayList<>();

    @AfterEach
    void killLeftoverDaemons() throws Exception {
        if (layout != null) {
            FakeMpsControlScript.killAll(layout);   // the agents leave their daemons running when they stop
        }
    }

    PluginConfig mpsConfig() throws Exception {
        fake = FakeMpsControlScript.write(Files.createDirectories(tmp.resolve("bin")));
        layout = new MpsLayout(tmp.resolve("mps"));
        return config("t4x4", PodDecisions.none()).withSharing(SharingOptions.parse(Map.of("--sharing", "mps", "--mps-root",
                layout.root().toString(), "--mps-control", fake.binary.toString(), "--mps-daemons", "agent")).withMpsTickEvery(Duration.ofMillis(50)));
    }

    /** The plugin's threads (its event loops, timer, NVML health monitor) and the JDK's thread of a directory watch. */
    static Set<Thread> pluginThreads() {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.isAlive()
                        && (t.getName().startsWith("qgpu-") || t.getName().equals("FileSystemWatchService")))
                .collect(Collectors.toSet());
    }

    /** Every qgpu thread started since {@code before} ends (joined, up to 10 s each). */
    static void assertNoNewThreads(Set<Thread> before) throws InterruptedException {
        for (Thread t : pluginThreads()) {
            if (!before.contains(t)) {
                t.join(10_000);
                assertFalse(t.isAlive(), "thread " + t.getName() + " still runs");
            }
        }
    }

    long count(String prefix) throws IOException {
        return fake.calls().stream().filter(c -> c.startsWith(prefix)).count();
    }

    @Test
    void aPluginDirectoryThatIsAFileFailsTheStartAndClosesWhatWasOpened() throws Exception {
        PluginConfig c = mpsConfig();
        kubelet.close();
        ContainerEnvironment.removeTree(dir);
        Files.writeString(dir, "a file where the kubelet's directory should be");
        Set<Thread> before = pluginThreads();

        IOException e = assertThrows(IOException.class, () -> start(c));
        assertTrue(e.getMessage().contains("does not exist"), e.getMessage());
        assertEquals(0, FAKE.fake_nvml_init_count(), "the NVML session is closed");
        assertEquals(4, count("start "), "the MPS daemons were started ...");
        assertEquals(0, count("command quit "), "... and keep running for the next start to adopt");
        assertNoNewThreads(before);
        assertEquals("a file where the kubelet's directory should be", Files.readString(dir), "no socket anywhere");
    }

    @Test
    void aServerThatFailsAfterOpeningItsSocketsClosesThemAndEverythingBefore() throws Exception {
        PluginConfig c = mpsConfig();
        Files.createDirectories(dir.resolve(Names.PLUGIN_SOCKET).resolve("in-the-way"));
        Set<Thread> before = pluginThreads();

        assertThrows(IOException.class, () -> start(c));
        assertEquals(0, FAKE.fake_nvml_init_count(), "the NVML session is closed");
        assertEquals(0, count("command quit "), "the MPS daemons keep running");
        assertNoNewThreads(before);
        assertTrue(Files.isDirectory(dir.resolve(Names.PLUGIN_SOCKET).resolve("in-the-way")), "what was in the way is left");
    }

    @Test
    void closeClosesEverythingNewestFirstAndASecondCloseDoesNothing() throws Exception {
        Set<Thread> before = pluginThreads();
        DevicePlugin plugin = start(mpsConfig().withReconcileEvery(Duration.ofSeconds(10)));
        for (int g = 0; g < 4; g++) {
            gpus.add(uuidOf(plugin, g));
        }
        assertEquals(List.of("NVML session", "MPS supervisor", "GPU health watch", "plugin server", "timer", "reconciler"),
                plugin.opened());
        assertTrue(Files.exists(dir.resolve(Names.PLUGIN_SOCKET)));

        plugin.close();
        assertEquals(List.of(), plugin.opened());
        assertEquals(0, FAKE.fake_nvml_init_count());
        assertEquals(0, count("command quit "), "the MPS daemons keep running");
        assertFalse(Files.exists(dir.resolve(Names.PLUGIN_SOCKET)), "the socket is removed");
        assertNoNewThreads(before);

        plugin.close();
        assertEquals(0, count("command quit "));
        assertEquals(0, FAKE.fake_nvml_init_count());
        plugin.awaitClose();
    }
}
