package io.qgpu.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Issue 41 item 4, the CLI's cases: each answered in one line naming the file or flag, the place and the value. */
class ClearAnswersTest {

    @TempDir
    Path dir;

    record Run(int code, String out, String err) {
        /** Exit 2 and one line on standard error. */
        String refusal() {
            assertEquals(2, code, err + out);
            String e = err.strip();
            assertFalse(e.contains("\n"), "one line: " + e);
            return e;
        }
    }

    static Run run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = Main.run(List.of(args), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void helpForAnUnknownCommandExits2NamingIt() {
        String e = run("help", "frobnicate").refusal();
        assertEquals("qgpu help: unknown command 'frobnicate'; known: simulate, ledger, place, inventory, replay", e);
        assertEquals(0, run("help", "place").code());
        assertEquals(0, run("help", "help").code());
    }

    @Test
    void anOptionGivenTwiceIsRefusedNamingBothValues() {
        String e = run("place", "--inventory", "examples/inventory.json", "--inventory", "examples/inventory-host.json",
                "--claims", "examples/claims-spread.json").refusal();
        assertEquals("qgpu place: --inventory = \"examples/inventory-host.json\": is given twice (first examples/inventory.json);"
                + " give --inventory once", e);
        String l = run("ledger", "--restore", "examples/ledger-snapshot.json", "--restore=x.json").refusal();
        assertTrue(l.contains("--restore = \"x.json\": is given twice"), l);
    }

    @Test
    void releaseUnderCompareIsRefused() {
        String e = run("simulate", "scenarios/online-offline-fixed-share.json", "--compare", "--release", "100ms").refusal();
        assertEquals("qgpu simulate: --release = \"100ms\": cannot be combined with --compare, which runs every release rule"
                + " itself (fixed delays 0..200ms and adaptive); drop one of the two", e);
    }

    private Path scenario(String from, String to) throws IOException {
        Path p = dir.resolve("s.json");
        String text = Files.readString(Path.of("scenarios/online-offline-fixed-share.json"));
        assertTrue(text.contains(from), from);
        Files.writeString(p, text.replace(from, to));
        return p;
    }

    @Test
    void scenarioDurationsAreShownInTheProjectsUnitsAndZeroIsNotPositive() throws Exception {
        Path zero = scenario("\"duration\": \"60s\"", "\"duration\": \"0s\"");
        String e = run("simulate", zero.toString(), "--out", dir.resolve("o").toString()).refusal();
        assertTrue(e.contains(zero + ": duration = \"0s\": must be positive (at least 1ns)"), e);
        Path quota = scenario("\"minQuota\": \"10ms\"", "\"minQuota\": \"0ms\"");
        String q = run("simulate", quota.toString(), "--out", dir.resolve("o").toString()).refusal();
        assertTrue(q.contains("compute.minQuota = \"0ms\": must be positive (at least 1ns)"), q);
        Path uniform = scenario("\"min\": \"2ms\", \"max\": \"8ms\"", "\"min\": \"8ms\", \"max\": \"2ms\"");
        String u = run("simulate", uniform.toString(), "--out", dir.resolve("o").toString()).refusal();
        assertTrue(u.contains("max = \"2ms\": must be at least min (8ms)"), u);
        for (String s : List.of(e, q, u)) {
            assertFalse(s.contains("PT") || s.matches(".*at least 1\\b.*"), s);
        }
    }

    @Test
    void aTraceThatIsNotUtf8IsRefusedWithItsFileLineAndByte() throws Exception {
        Path nodes = Files.writeString(dir.resolve("nodes.csv"), "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,131072,2,T4\n");
        Path pods = dir.resolve("pods.csv");
        Files.write(pods, "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,1,500\np\u00e9,1000,1024,1,500\n"
                .getBytes(StandardCharsets.ISO_8859_1));
        String e = run("replay", "--nodes", nodes.toString(), "--pods", pods.toString(), "--out", dir.resolve("o").toString())
                .refusal();
        assertEquals("qgpu replay: " + pods + ":3: column (text): '0xE9' at byte 2 of the line is not UTF-8 text; save the file"
                + " as UTF-8 (plain ASCII is UTF-8)", e);
        assertFalse(e.contains("Input length"), e);
    }

    @Test
    void aPodNameGivenTwiceInATraceIsRefused() throws Exception {
        Path nodes = Files.writeString(dir.resolve("nodes.csv"), "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,131072,2,T4\n");
        Path pods = Files.writeString(dir.resolve("pods.csv"), "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                + "p0,1000,1024,1,500\np1,1000,1024,1,500\np0,2000,1024,1,300\n");
        String e = run("replay", "--nodes", nodes.toString(), "--pods", pods.toString(), "--out", dir.resolve("o").toString())
                .refusal();
        assertEquals("qgpu replay: " + pods + ":4: column name: 'p0' is a duplicate pod name (line 2 has it too); pod names"
                + " must be unique", e);
    }

    @Test
    void aWholeNumberInExponentFormIsNotCalledAFraction() throws Exception {
        for (String v : List.of("1.6e1", "1e30")) {
            Path claims = Files.writeString(dir.resolve("claims.json"), "[{\"tenant\": \"a\", \"memoryGiB\": " + v + "}]");
            String e = run("place", "--inventory", "examples/inventory.json", "--claims", claims.toString()).refusal();
            assertTrue(e.contains("claims[0].memoryGiB = " + v + ": must be a whole number written as digits alone (no decimal"
                    + " point, no exponent)"), e);
            assertFalse(e.contains("fraction"), e);
        }
    }

    private Path edited(String example, String from, String to) throws IOException {
        String text = Files.readString(Path.of(example));
        assertTrue(text.contains(from), from);
        return Files.writeString(dir.resolve("edited.json"), text.replaceFirst(java.util.regex.Pattern.quote(from),
                java.util.regex.Matcher.quoteReplacement(to)));
    }

    @Test
    void implausibleInventoryValuesAreRefusedWithFilePathAndValue() throws Exception {
        Path eib = edited("examples/inventory.json", "\"memoryGiB\": 32", "\"memoryGiB\": 8589934591");
        String e = run("place", "--inventory", eib.toString(), "--claims", "examples/claims-spread.json").refusal();
        assertTrue(e.contains(eib + ": nodes[0].gpus[0].memoryGiB = 8589934591: is more memory than any GPU has: at most"
                + " 1048576 GiB (1 PiB) (line "), e);
        Path nul = edited("examples/inventory.json", "\"gpus\": [", "\"gpus\": null, \"x\": [");
        String n = run("place", "--inventory", nul.toString(), "--claims", "examples/claims-spread.json").refusal();
        assertTrue(n.contains(nul + ": nodes[0].gpus = null: must be an array of GPUs"), n);
        Path label = edited("examples/inventory.json", "\"pool\": \"training\"", "\"pool\": 7");
        String l = run("place", "--inventory", label.toString(), "--claims", "examples/claims-spread.json").refusal();
        assertTrue(l.contains(label + ": nodes[0].labels.pool = 7: must be a string"), l);
        String li = run("ledger", label.toString(), "examples/ledger-operations.json").refusal();
        assertTrue(li.contains("nodes[0].labels.pool = 7: must be a string"), li);
        Path bytes = edited("examples/ledger-snapshot.json", "\"memoryBytes\" : 17179869184", "\"memoryBytes\" : 9223372036854775807");
        String b = run("ledger", "--restore", bytes.toString()).refusal();
        assertTrue(b.contains(bytes + ": nodes[0].gpus[0].memoryBytes = 9223372036854775807: is more memory than any GPU has"), b);
    }

    /** A snapshot's rules may name a preset, as an inventory's do: honoured (and documented), the preset of this version. */
    @Test
    void aPresetRulesNameInASnapshotIsTheNamedPreset() throws Exception {
        String text = Files.readString(Path.of("examples/ledger-snapshot.json"));
        String rules = text.substring(text.indexOf("\"rules\""), text.indexOf("}", text.indexOf("\"rules\"")) + 1);
        Path preset = Files.writeString(dir.resolve("preset.json"), text.replace(rules, "\"rules\": {\"name\": \"hami\"}"));
        Run r = run("ledger", "--restore", preset.toString(), "--json");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains("\"name\" : \"hami\""), r.out());
        assertTrue(r.out().contains("\"maxTenantsPerGpu\""), "the snapshot written back spells every rule out: " + r.out());
    }
}
