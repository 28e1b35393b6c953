package io.qgpu.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.json.QgpuJson;
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
        assertTrue(r.out().contains("INSUFFICIENT_MEMORY requested 6 GiB, free 4 GiB (short by 2 GiB)"), r.out());
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
        assertTrue(r.err().contains(ops + ": operations[0].op = \"explode\": must be reserve, release or health (line 1"),
                r.err());
        Run missing = run("ledger", EXAMPLES.resolve("ledger-inventory.json").toString());
        assertEquals(2, missing.code());
        assertTrue(missing.err().contains("missing OPERATIONS.json"), missing.err());
        assertEquals(2, run("nope").code());
        assertEquals(0, run("help").code());
    }

    @Test
    void unknownKeysInOperationsAreRefusedWithFilePathAndLine(@TempDir Path tmp) throws Exception {
        Path ops = tmp.resolve("ops.json");
        Files.writeString(ops, "[\n {\"op\": \"release\", \"tenant\": \"a\"},\n {\"op\": \"release\", \"tenant\": \"a\", \"force\": true}\n]");
        Run r = run("ledger", EXAMPLES.resolve("ledger-inventory.json").toString(), ops.toString());
        assertEquals(2, r.code());
        assertTrue(r.err().contains(ops + ": operations[1].force = true: a release operation does not take this key; it takes op, tenant (line 3"), r.err());
        Files.writeString(ops, "[{\"op\": \"release\", \"tenant\": \"a\", \"node\": \"n\"}]");
        Run wrongOp = run("ledger", EXAMPLES.resolve("ledger-inventory.json").toString(), ops.toString());
        assertTrue(wrongOp.err().contains("operations[0].node = \"n\": a release operation does not take this key; it takes op, tenant"),
                wrongOp.err());
        Files.writeString(ops, "[{\"op\": \"reserve\", \"node\": \"t4-node\", \"gpus\": [\"GPU-t4-0\"],"
                + " \"claim\": {\"tenant\": \"x\", \"memoryGiB\": 1.5}}]");
        Run fraction = run("ledger", EXAMPLES.resolve("ledger-inventory.json").toString(), ops.toString());
        assertTrue(fraction.err().contains("operations[0].claim.memoryGiB = 1.5: must be a whole number"), fraction.err());
        Files.writeString(ops, "");
        Run empty = run("ledger", EXAMPLES.resolve("ledger-inventory.json").toString(), ops.toString());
        assertEquals("qgpu ledger: " + ops + ": is empty", empty.err().trim());
        Run dir = run("ledger", EXAMPLES.resolve("ledger-inventory.json").toString(), tmp.toString());
        assertEquals("qgpu ledger: OPERATIONS.json = \"" + tmp + "\": is a directory; give a file", dir.err().trim());
    }

    @Test
    void restoreStartsFromASnapshotAndGivesTheSameState(@TempDir Path tmp) throws Exception {
        Path snap = tmp.resolve("snap.json");
        Run first = run("ledger", EXAMPLES.resolve("ledger-inventory.json").toString(),
                EXAMPLES.resolve("ledger-operations.json").toString(), "--snapshot", snap.toString());
        assertEquals(0, first.code(), first.err());
        Path again = tmp.resolve("again.json");
        Run restored = run("ledger", "--restore", snap.toString(), "--snapshot", again.toString());
        assertEquals(0, restored.code(), restored.err());
        assertEquals(Files.readString(snap), Files.readString(again));
        assertTrue(restored.out().contains("0 operation(s), 0 refused, 4 reservation(s) held, 1 displaced"), restored.out());
        Path ops = tmp.resolve("ops.json");
        Files.writeString(ops, "[{\"op\": \"release\", \"tenant\": \"infer-a\"}]");
        Run more = run("ledger", "--restore", snap.toString(), ops.toString());
        assertTrue(more.out().contains("#0 release infer-a: ok"), more.out());
        assertTrue(more.out().contains("3 reservation(s) held"), more.out());
        Run shipped = run("ledger", "--restore", EXAMPLES.resolve("ledger-snapshot.json").toString());
        assertEquals(0, shipped.code(), shipped.err());
    }

    /** Issue 30 item 4: an unknown GPU is a refusal in health as in reserve, named by file, index and line; the rest still runs. */
    @Test
    void anUnknownGpuIsRefusedAlikeInHealthAndReserveAndTheRestIsApplied(@TempDir Path tmp) throws Exception {
        Path ops = tmp.resolve("ops.json");
        Files.writeString(ops, "[\n"
                + " {\"op\": \"health\", \"gpu\": \"GPU-nope\", \"health\": \"unhealthy\"},\n"
                + " {\"op\": \"reserve\", \"node\": \"t4-node\", \"gpus\": [\"GPU-nope\"], \"claim\": {\"tenant\": \"x\", \"memoryGiB\": 1}},\n"
                + " {\"op\": \"reserve\", \"node\": \"t4-node\", \"gpus\": [\"GPU-t4-0\", \"GPU-t4-0\"], \"claim\": {\"tenant\": \"y\", \"memoryGiB\": 1, \"gpus\": 2}},\n"
                + " {\"op\": \"reserve\", \"node\": \"t4-node\", \"gpus\": [\"GPU-t4-0\"], \"claim\": {\"tenant\": \"z\", \"memoryGiB\": 1}}\n"
                + "]");
        Run r = run("ledger", EXAMPLES.resolve("ledger-inventory.json").toString(), ops.toString());
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains("#0 health GPU-nope -> unhealthy: REFUSED (" + ops + " operations[0], line 2)"), r.out());
        assertTrue(r.out().contains("      - no GPU GPU-nope in the ledger"), r.out());
        assertTrue(r.out().contains("#1 reserve x on t4-node [GPU-nope]: REFUSED (" + ops + " operations[1], line 3)"), r.out());
        assertTrue(r.out().contains("#2 reserve y on t4-node [GPU-t4-0, GPU-t4-0]: REFUSED (" + ops + " operations[2], line 4)\n"
                + "      - gpus lists GPU-t4-0 twice"), r.out());
        assertTrue(!r.out().contains("placement[") && !r.out().contains("gpuCount"), r.out());
        assertTrue(r.out().contains("#3 reserve z on t4-node [GPU-t4-0]: ok"), r.out());
        assertTrue(r.out().contains("4 operation(s), 3 refused, 1 reservation(s) held"), r.out());
        assertTrue(r.err().isEmpty(), r.err());
    }

    /** Issue 30 item 8: --restore takes a ledger snapshot only, and says what to do with an inventory. */
    @Test
    void restoreRefusesAnInventoryAndSaysWhereItGoes() {
        Path inv = EXAMPLES.resolve("ledger-inventory.json");
        Run r = run("ledger", "--restore", inv.toString());
        assertEquals(2, r.code(), r.out());
        assertTrue(r.err().contains("--restore " + inv + ": is an inventory, not a ledger snapshot"), r.err());
    }

    /** Issue 30 item 8: marking a GPU unhealthy (a user's input) logs under the public Ledger, no internal class name. */
    @Test
    void theLedgerLogsAUsersHealthChangeUnderItsPublicName() throws Exception {
        PrintStream saved = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            Run r = run("ledger", EXAMPLES.resolve("ledger-inventory.json").toString(), EXAMPLES.resolve("ledger-operations.json").toString());
            assertEquals(0, r.code(), r.err());
        } finally {
            System.setErr(saved);
        }
        String log = captured.toString(StandardCharsets.UTF_8);
        assertTrue(log.contains("WARN io.qgpu.core.ledger.Ledger - GPU GPU-h100-3"), log);
        assertTrue(!log.contains(".internal."), log);
    }

    /** Issue 30 item 4: a GPU count other than the claim's is said in the file's terms (not placement[...].slices.size). */
    @Test
    void aGpuListThatDoesNotMatchTheClaimIsRefusedInTheFilesTerms(@TempDir Path tmp) throws Exception {
        Path ops = tmp.resolve("ops.json");
        Files.writeString(ops, "[{\"op\": \"reserve\", \"node\": \"t4-node\", \"gpus\": [\"GPU-t4-0\", \"GPU-t4-1\"],"
                + " \"claim\": {\"tenant\": \"z\", \"memoryGiB\": 1}}]");
        Run r = run("ledger", EXAMPLES.resolve("ledger-inventory.json").toString(), ops.toString());
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains("#0 reserve z on t4-node [GPU-t4-0, GPU-t4-1]: REFUSED (" + ops + " operations[0], line 1)\n"
                + "      - gpus lists 2 GPU(s); the claim asks for 1 (its gpus)"), r.out());
        assertTrue(!r.out().contains("placement[") && !r.out().contains("gpuCount"), r.out());
    }
}
