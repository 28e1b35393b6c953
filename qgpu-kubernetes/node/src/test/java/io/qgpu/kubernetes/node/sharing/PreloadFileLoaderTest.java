package io.qgpu.kubernetes.node.sharing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the dynamic loader does with the preload file the agents write (no GPU, no HAMi-core: a tiny library whose
 * constructor says it was loaded stands in for {@code libvgpu.so}). The file, written by
 * {@link SharingEdits.HostFile}, is bind-mounted at {@code /etc/ld.so.preload} in a private mount namespace, as a
 * container runtime mounts it; then processes that try to shed the library run there: one without
 * {@code LD_PRELOAD}, one under {@code env -i}, one as uid 65534, and a set-user-ID program started by uid 65534.
 * Each loads the library, and the set-user-ID program still sees HAMi-core's limit variable (glibc removes only its
 * own list of unsafe variables in secure-execution mode). For contrast, the same escapes against {@code LD_PRELOAD} alone (the agents'
 * {@code --hami-core-preload env}): the library is loaded only while the variable is there and the program is not
 * set-user-ID.
 *
 * <p>Needs root, {@code unshare}, {@code setpriv}, a C compiler and a set-user-ID {@code su}; skipped, saying which
 * is missing, otherwise. The loader's behaviour is glibc's (its {@code elf/rtld.c} reads {@code /etc/ld.so.preload}
 * in every process and ignores {@code LD_PRELOAD} paths with a slash in a set-user-ID one); this test shows it on the
 * machine it runs on, and says nothing about HAMi-core's limits.
 */
class PreloadFileLoaderTest {
    static final String MARK = "qgpu-preload-probe loaded";

    @TempDir
    Path tmp;

    @Test
    void everyWayOfSheddingTheLibraryStillLoadsItThroughThePreloadFile() throws Exception {
        Path so = setUp();
        Path preload = tmp.resolve("hami-core-preload/ld.so.preload");
        new SharingEdits.HostFile(preload.toString(), so + "\n").create();
        Files.setPosixFilePermissions(preload.getParent(), PosixFilePermissions.fromString("rwxr-xr-x"));
        String script = """
                set -e
                cp -a /etc "$0/etc"
                : > "$0/etc/ld.so.preload"
                mount --bind "$0/etc" /etc
                mount --bind "$1" /etc/ld.so.preload
                echo "== no LD_PRELOAD"; env -u LD_PRELOAD /bin/true
                echo "== env -i"; env -i /bin/true
                echo "== uid 65534"; setpriv --reuid=65534 --regid=65534 --clear-groups env -i /bin/true
                echo "== setuid su as uid 65534"; setpriv --reuid=65534 --regid=65534 --clear-groups \
                    env CUDA_DEVICE_MEMORY_LIMIT_0=8192m "$2" --version >/dev/null
                """;
        Map<String, List<String>> loads = run(List.of("unshare", "-m", "--propagation", "private", "/bin/sh", "-c", script,
                tmp.toString(), preload.toString(), su().toString()));
        // each program a section starts loads the library, the last one (true, su) included
        assertEquals(List.of("env uid=0 euid=0 limit=-", "true uid=0 euid=0 limit=-"), loads.get("no LD_PRELOAD"));
        assertEquals(List.of("env uid=0 euid=0 limit=-", "true uid=0 euid=0 limit=-"), loads.get("env -i"));
        assertEquals(List.of("setpriv uid=0 euid=0 limit=-", "env uid=65534 euid=65534 limit=-", "true uid=65534 euid=65534 limit=-"),
                loads.get("uid 65534"));
        assertEquals(List.of("setpriv uid=0 euid=0 limit=-", "env uid=65534 euid=65534 limit=-", "su uid=65534 euid=0 limit=8192m"),
                loads.get("setuid su as uid 65534"),
                "a set-user-ID program (secure-execution mode) loads it too, and keeps HAMi-core's limit variable");
    }

    @Test
    void ldPreloadAloneIsShedByEnvIAndIgnoredBySetuidPrograms() throws Exception {
        Path so = setUp();
        assumeFalse(Files.exists(Path.of("/etc/ld.so.preload")), "this machine has an /etc/ld.so.preload of its own");
        String script = """
                set -e
                echo "== LD_PRELOAD kept"; env LD_PRELOAD="$0" /bin/true
                echo "== env -i"; env LD_PRELOAD="$0" env -i /bin/true
                echo "== setuid su as uid 65534"; setpriv --reuid=65534 --regid=65534 --clear-groups env LD_PRELOAD="$0" "$1" --version >/dev/null
                """;
        Map<String, List<String>> loads = run(List.of("/bin/sh", "-c", script, so.toString(), su().toString()));
        assertEquals(List.of("true uid=0 euid=0 limit=-"), loads.get("LD_PRELOAD kept"), "loaded while the variable is there");
        assertEquals(List.of("env uid=0 euid=0 limit=-"), loads.get("env -i"), "the env that clears it loads it; the program it starts does not");
        assertEquals(List.of(), loads.get("setuid su as uid 65534"), "the set-user-ID su ignores a LD_PRELOAD path");
    }

    /** The stand-in library, after the checks that the machine can run the test. */
    private Path setUp() throws Exception {
        assumeTrue("root".equals(System.getProperty("user.name")), "needs root (mount namespace, another uid)");
        for (String tool : List.of("/usr/bin/unshare", "/usr/bin/setpriv", "/usr/bin/cc")) {
            assumeTrue(Files.isExecutable(Path.of(tool)), "needs " + tool);
        }
        assumeTrue(su() != null, "needs a set-user-ID su");
        Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rwxr-xr-x"));
        Path src = Files.writeString(tmp.resolve("probe.c"), """
                #include <stdio.h>
                #include <stdlib.h>
                #include <string.h>
                #include <unistd.h>
                __attribute__((constructor)) static void probe(void) {
                    char exe[4096] = "";
                    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
                    if (n > 0) exe[n] = 0;
                    const char *base = strrchr(exe, '/');
                    const char *limit = getenv("CUDA_DEVICE_MEMORY_LIMIT_0");
                    fprintf(stderr, "%s %s uid=%d euid=%d limit=%s\\n", "%MARK%", base ? base + 1 : exe, (int) getuid(), (int) geteuid(),
                            limit ? limit : "-");
                }
                """.replace("%MARK%", MARK));
        Path so = tmp.resolve("libprobe.so");
        Process cc = new ProcessBuilder("/usr/bin/cc", "-shared", "-fPIC", "-o", so.toString(), src.toString()).redirectErrorStream(true).start();
        assumeTrue(cc.waitFor(60, TimeUnit.SECONDS) && cc.exitValue() == 0, "the C compiler failed: " + new String(cc.getInputStream().readAllBytes()));
        Files.setPosixFilePermissions(so, PosixFilePermissions.fromString("rwxr-xr-x"));
        return so;
    }

    private static Path su() throws IOException {
        for (String p : List.of("/usr/bin/su", "/bin/su")) {
            Path su = Path.of(p);
            if (Files.isRegularFile(su) && ((Integer) Files.getAttribute(su, "unix:mode") & 04000) != 0
                    && Integer.valueOf(0).equals(Files.getAttribute(su, "unix:uid"))) {
                return su;
            }
        }
        return null;
    }

    /**
     * Runs the script; per section ({@code == name} lines) the programs that loaded the library, in order, each as
     * {@code <program> uid=<real> euid=<effective>}.
     */
    private static Map<String, List<String>> run(List<String> command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("the script did not finish");
        }
        String out = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.exitValue(), out);
        Map<String, List<String>> loads = new LinkedHashMap<>();
        String section = null;
        for (String line : out.lines().toList()) {
            if (line.startsWith("== ")) {
                section = line.substring(3);
                loads.put(section, new ArrayList<>());
            } else if (line.startsWith(MARK + " ") && section != null) {
                loads.get(section).add(line.substring(MARK.length() + 1));
            }
        }
        return loads;
    }
}
