package io.qgpu.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The command line as documented: every flag a command takes is in its help and in the README,
 * every example in the help texts and the README's CLI section runs (from the repository root,
 * here in-process through {@link Main#run}), one duration syntax, and {@code --version}.
 */
class CliConsistencyTest {

    /** The repository root: the tests run in samples/qgpu-cli. */
    static final Path ROOT = Path.of("").toAbsolutePath().getParent().getParent();
    static final String FAKE_NVML = "qgpu-nvml/target/fake-nvml/libnvidia-ml.so.1";

    static LedgerCommandTest.Run run(List<String> args) {
        return LedgerCommandTest.run(args.toArray(String[]::new));
    }

    /** The section of README.md about the command-line tool. */
    static String readmeCliSection() throws Exception {
        String readme = Files.readString(ROOT.resolve("README.md"));
        int start = readme.indexOf("## What `./qgpu` does");
        int end = readme.indexOf("\n## ", start + 1);
        assertTrue(start >= 0, "README has a CLI section");
        return readme.substring(start, end < 0 ? readme.length() : end);
    }

    @Test
    void everyFlagIsInTheHelpAndInTheReadme() throws Exception {
        String readme = readmeCliSection();
        for (Subcommand s : Main.subcommands().values()) {
            LedgerCommandTest.Run r = run(List.of(s.name(), "--no-such-flag"));
            assertEquals(2, r.code());
            Matcher m = Pattern.compile("this command takes (.*)").matcher(r.err());
            assertTrue(m.find(), r.err());
            for (String flag : m.group(1).trim().split(", ")) {
                assertTrue(s.usage().contains(flag), s.name() + " help lacks " + flag);
                assertTrue(Pattern.compile("qgpu " + s.name() + "\\b[^\\n]*" + Pattern.quote(flag) + "\\b").matcher(readme).find(),
                        "README's CLI section lacks " + flag + " in a qgpu " + s.name() + " line");
            }
        }
        assertTrue(readme.contains("--version"));
    }

    @Test
    void everyExampleInTheHelpAndTheReadmeRuns(@TempDir Path tmp) throws Exception {
        List<String> examples = new ArrayList<>();
        for (Subcommand s : Main.subcommands().values()) {
            for (String line : s.usage().split("\n")) {
                String t = line.trim();
                if (t.startsWith("qgpu " + s.name() + " ") && !t.contains("[") && !t.contains("FILE") && !t.contains(".json ")
                        || t.startsWith("qgpu " + s.name() + " ") && t.contains("samples/")) {
                    examples.add(t);
                }
            }
        }
        Matcher block = Pattern.compile("```bash\\n(.*?)```", Pattern.DOTALL).matcher(readmeCliSection());
        while (block.find()) {
            for (String line : block.group(1).split("\n")) {
                if (line.startsWith("./qgpu ")) {
                    examples.add(line.substring(2));
                }
            }
        }
        assertTrue(examples.size() >= 8, "examples found: " + examples);
        int n = 0;
        for (String example : examples) {
            List<String> args = new ArrayList<>();
            String[] words = example.split("\\s+");
            for (int i = 1; i < words.length; i++) {
                String w = words[i];
                if (w.equals(FAKE_NVML)) {
                    w = Path.of(System.getProperty("qgpu.fakeNvml.dir")).resolve("libnvidia-ml.so.1").toString();
                } else if (w.startsWith("samples/") || w.startsWith("qgpu-")) {
                    w = ROOT.resolve(w).toString();
                } else if (i > 1 && (words[i - 1].equals("--out") || words[i - 1].equals("--snapshot"))) {
                    w = tmp.resolve("out" + n++).toString();
                }
                args.add(w);
            }
            if (args.get(0).equals("simulate") && !args.contains("--out")) {
                args.add("--out");
                args.add(tmp.resolve("sim" + n++).toString());
            }
            LedgerCommandTest.Run r = run(args);
            // place exits 1 when some claims of the example do not fit: the example shows exactly that
            assertTrue(r.code() == 0 || (r.code() == 1 && args.get(0).equals("place")), example + "\n" + r.err());
            assertFalse(r.err().contains("qgpu " + args.get(0) + ":"), example + "\n" + r.err());
        }
    }

    @Test
    void versionComesFromTheBuild() {
        LedgerCommandTest.Run r = run(List.of("--version"));
        assertEquals(0, r.code());
        assertTrue(r.out().matches("qgpu \\d+\\.\\d+\\.\\d+(-SNAPSHOT)?\\s*"), r.out());
        assertTrue(run(List.of("help")).out().contains("--version"));
    }

    @Test
    void aBareNumberIsRefusedAsADurationWithTheAcceptedForms() {
        LedgerCommandTest.Run r = run(List.of("simulate", ROOT.resolve("samples/qgpu-cli/scenarios/online-offline-burst-share.json")
                .toString(), "--duration", "30"));
        assertEquals(2, r.code());
        assertTrue(r.err().contains("--duration = \"30\": must be a duration: a number and a unit: ns, us, ms, s or m"),
                r.err());
    }

    @Test
    void inventoryWithoutAnNvmlLibraryPointsToTheFlag() {
        String key = "qgpu.nvml.library";
        String before = System.getProperty(key);
        System.setProperty(key, ROOT.resolve("no-such-dir/libnvidia-ml.so.1").toString());
        try {
            LedgerCommandTest.Run r = run(List.of("inventory"));
            assertEquals(2, r.code());
            assertTrue(r.err().contains("Give its path with --nvml-lib PATH, or try the fake library the build compiles:"
                    + " qgpu inventory --nvml-lib qgpu-nvml/target/fake-nvml/libnvidia-ml.so.1"), r.err());
        } finally {
            if (before == null) {
                System.clearProperty(key);
            } else {
                System.setProperty(key, before);
            }
        }
    }
}
