package io.qgpu.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.core.json.QgpuJson;
import io.qgpu.core.ledger.LedgerSnapshot;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LedgerCommandTest {

    static final Path EXAMPLES = Path.of("examples");

    record Run(int code, String out, String err) {
    }

    static Run run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = Main.run(List.of(args), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void appliesTheExampleOperationsAndPrintsEveryRefusal(@TempDir Path tmp) throws Exception {
        Path snap = tmp.resolve("snap.json");
        Run r = run("ledger", EXAMPLES.resolve("ledger-inventory.json").toString(),
                EXAMPLES.resolve("ledger-operations.json").toString(), "--snapshot", snap.toString());
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains("#2 reserve too-big on t4-node [GPU-t4-0]: REFUSED"), r.out());
        assertTrue(r.out().contains("INSUFFICIENT_MEMORY requested 6442450944, available 4294967296"), r.out());
        assertTrue(r.out().contains("RESERVED_FOR_OTHER_CLASS"), r.out());
        assertTrue(r.out().contains("GRANULARITY"), r.out());
        assertTrue(r.out().contains("DUPLICATE_TENANT"), r.out());
        assertTrue(r.out().contains("displaced: [infer-e]"), r.out());
        assertTrue(r.out().contains("13 operation(s), 5 refused, 4 reservation(s) held, 1 displaced"), r.out());
        LedgerSnapshot s = QgpuJson.readSnapshot(Files.readString(snap));
        assertEquals(List.of("infer-a", "infer-e", "too-big", "train-d"),
                s.placements().stream().map(p -> p.tenantId()).toList());
    }

    @Test
    void badInputExitsWithTwoAndNamesTheProblem(@TempDir Path tmp) throws Exception {
        Path ops = tmp.resolve("ops.json");
        Files.writeString(ops, "[{\"op\": \"explode\"}]");
        Run r = run("ledger", EXAMPLES.resolve("ledger-inventory.json").toString(), ops.toString());
        assertEquals(2, r.code());
        assertTrue(r.err().contains("operations[0].op = \"explode\""), r.err());
        Run missing = run("ledger", EXAMPLES.resolve("ledger-inventory.json").toString());
        assertEquals(2, missing.code());
        assertTrue(missing.err().contains("missing OPERATIONS.json"), missing.err());
        assertEquals(2, run("nope").code());
        assertEquals(0, run("help").code());
    }
}
