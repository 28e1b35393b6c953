package io.qgpu.cli;

import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuState;
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import io.qgpu.api.PriorityClass;
import io.qgpu.json.Inventory;
import io.qgpu.json.QgpuJson;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.ledger.ReserveResult;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * {@code qgpu ledger INVENTORY.json OPERATIONS.json} (or {@code --restore SNAPSHOT.json}): applies
 * reserve/release/health operations to a ledger and prints every refusal with its reasons and the
 * resulting state.
 */
final class LedgerCommand implements Subcommand {

    @Override
    public String name() {
        return "ledger";
    }

    @Override
    public String summary() {
        return "apply reserve/release operations to an inventory; print refusals and the state";
    }

    @Override
    public String usage() {
        return """
                usage: qgpu ledger INVENTORY.json OPERATIONS.json [--json] [--snapshot OUT.json]
                       qgpu ledger --restore SNAPSHOT.json [OPERATIONS.json] [--json] [--snapshot OUT.json]

                  INVENTORY.json    {"rules": {"name": "qgpu"}, "nodes": [...]}  (docs/formats.md)
                  OPERATIONS.json   a JSON array, applied in order:
                                      {"op": "reserve", "node": N, "gpus": [UUID...], "claim": {...}}
                                      {"op": "release", "tenant": T}
                                      {"op": "health", "gpu": UUID, "health": "unhealthy"|"healthy"}
                  --restore FILE    start from a ledger snapshot (as --snapshot writes it) instead of an inventory
                  --json            print the final state as a ledger snapshot (JSON) instead of a table
                  --snapshot FILE   also write the final state to FILE as a ledger snapshot

                Exit code 0 when every operation was read (refusals are results, not errors),
                2 on unreadable input.
                examples:
                  qgpu ledger samples/qgpu-cli/examples/ledger-inventory.json samples/qgpu-cli/examples/ledger-operations.json
                  qgpu ledger --restore samples/qgpu-cli/examples/ledger-snapshot.json""";
    }

    @Override
    public int run(List<String> argv, PrintStream out, PrintStream err) throws Exception {
        Args args = Args.parse(argv, Set.of("--json"), Set.of("--snapshot", "--restore"));
        Path snapshotOut = args.option("--snapshot").map(v -> OutputNames.userPath("--snapshot", v)).orElse(null);
        FileRoles files = new FileRoles();
        if (snapshotOut != null) {
            files.output("--snapshot", snapshotOut);
        }
        Ledger ledger;
        List<LedgerOperations.Operation> ops;
        if (args.option("--restore").isPresent()) {
            if (args.positionals().size() > 1) {
                throw new UsageException("with --restore, give at most OPERATIONS.json; unexpected argument "
                        + args.positionals().get(1));
            }
            Path snapshotFile = OutputNames.userPath("--restore", args.option("--restore").get());
            Path opsFile = args.positionals().isEmpty() ? null : OutputNames.userPath("OPERATIONS.json", args.positionals().get(0));
            files.input("--restore", snapshotFile);
            if (opsFile != null) {
                files.input("OPERATIONS.json", opsFile);
            }
            files.check();
            ledger = Ledger.of(snapshot(snapshotFile, args.option("--restore").get()));
            ops = opsFile == null ? List.of() : LedgerOperations.read(opsFile);
        } else {
            Path inventoryFile = OutputNames.userPath("INVENTORY.json", args.positional(0, "INVENTORY.json (or --restore SNAPSHOT.json)"));
            Path opsFile = OutputNames.userPath("OPERATIONS.json", args.positional(1, "OPERATIONS.json"));
            if (args.positionals().size() > 2) {
                throw new UsageException("unexpected argument " + args.positionals().get(2));
            }
            files.input("INVENTORY.json", inventoryFile).input("OPERATIONS.json", opsFile).check();
            Inventory inventory = QgpuJson.readInventory(inventoryFile);
            ops = LedgerOperations.read(opsFile);
            ledger = PlaceCommand.ledgerOf(inventory, inventoryFile.toString());
        }
        boolean json = args.flag("--json");
        PrintStream log = json ? err : out;
        int refused = 0;
        for (int i = 0; i < ops.size(); i++) {
            LedgerOperations.Operation op = ops.get(i);
            if (op instanceof LedgerOperations.Reserve r) {
                String what = String.format("#%d reserve %s on %s %s", i, r.claim().tenantId(), r.node(), r.gpus());
                if (r.problem() != null) {
                    refused++;
                    refusal(log, what, op, List.of(r.problem()));
                    continue;
                }
                Placement p;
                try {
                    p = r.placement(ledger);
                } catch (io.qgpu.api.InvalidValueException e) {
                    // a placement that cannot even be written down (the same GPU twice, ...): refused like any other
                    refused++;
                    refusal(log, what, op, List.of(e.getMessage()));
                    continue;
                }
                ReserveResult result = ledger.reserve(p);
                if (result instanceof ReserveResult.Refused f) {
                    refused++;
                    refusal(log, what, op, f.reasons().stream().map(io.qgpu.api.Reason::message).toList());
                } else {
                    log.println(what + ": ok");
                }
            } else if (op instanceof LedgerOperations.Release r) {
                boolean was = ledger.release(r.tenant()).isPresent();
                log.printf("#%d release %s: %s%n", i, r.tenant(), was ? "ok" : "not held (no-op)");
            } else if (op instanceof LedgerOperations.SetHealth h) {
                String what = String.format("#%d health %s -> %s", i, h.gpu(), h.health().name().toLowerCase(Locale.ROOT));
                if (!knows(ledger, h.gpu())) {
                    // as reserve answers a GPU it does not know: a refusal with its reason, and the next operation
                    refused++;
                    refusal(log, what, op, List.of("no GPU " + h.gpu() + " in the ledger"));
                    continue;
                }
                List<Placement> displaced = ledger.setHealth(h.gpu(), h.health());
                log.println(what + (displaced.isEmpty() ? "" : "; displaced: " + displaced.stream().map(Placement::tenantId).toList()));
            }
        }
        String snapshot = QgpuJson.writeSnapshot(ledger.snapshot());
        if (snapshotOut != null) {
            Files.writeString(snapshotOut, snapshot);
        }
        if (json) {
            out.print(snapshot);
        } else {
            out.println();
            printState(ledger, out);
            out.printf("%n%d operation(s), %d refused, %d reservation(s) held, %d displaced%n", ops.size(), refused,
                    ledger.size(), ledger.displaced().size());
        }
        return 0;
    }

    /** A ledger snapshot; an inventory given here is refused with where it goes instead. */
    private static io.qgpu.core.ledger.LedgerSnapshot snapshot(Path file, String asWritten) {
        try {
            com.fasterxml.jackson.databind.JsonNode root = io.qgpu.json.JsonInput.read(file, "").root();
            if (root.isObject() && root.has("nodes") && !root.has("placements")) {
                throw new UsageException("--restore " + asWritten + ": is an inventory, not a ledger snapshot (as --snapshot writes"
                        + " it); give an inventory as the first argument: qgpu ledger " + asWritten + " OPERATIONS.json");
            }
        } catch (io.qgpu.json.QgpuJsonException e) {
            // not JSON at all: the snapshot reader says so, naming the file
        }
        return QgpuJson.readSnapshot(file);
    }

    private static void refusal(PrintStream log, String what, LedgerOperations.Operation op, List<String> reasons) {
        log.println(what + ": REFUSED (" + op.where() + ")");
        reasons.forEach(reason -> log.println("      - " + reason));
    }

    private static boolean knows(Ledger ledger, String gpu) {
        for (NodeState n : ledger.nodes()) {
            for (GpuState g : n.gpus()) {
                if (g.uuid().equals(gpu)) {
                    return true;
                }
            }
        }
        return false;
    }

    /** One row per GPU. */
    static void printState(Ledger ledger, PrintStream out) {
        out.printf("%-10s %-28s %-22s %8s %15s %7s %8s %7s %s%n", "NODE", "GPU", "MODEL", "HEALTH", "MEMORY GiB",
                "ONLINE", "OFFLINE", "TENANTS", "HOLDERS");
        for (NodeState n : ledger.nodes()) {
            for (GpuState g : n.gpus()) {
                out.printf("%-10s %-28s %-22s %8s %15s %6d%% %7d%% %3d/%-3d %s%n", n.name(), g.uuid(),
                        trim(g.device().model(), 22), g.device().health().name().toLowerCase(),
                        gib(g.memoryUsed()) + "/" + gib(g.device().memoryBytes()),
                        g.guaranteed(PriorityClass.ONLINE), g.guaranteed(PriorityClass.OFFLINE), g.tenants(),
                        ledger.rules().maxTenants(g.device()),
                        String.join(",", g.holdings().stream().map(h -> h.tenantId()).toList()));
            }
        }
    }

    private static String gib(long bytes) {
        double g = bytes / (double) GpuDevice.GIB;
        return g == Math.rint(g) ? Long.toString((long) g) : String.format("%.2f", g);
    }

    private static String trim(String s, int n) {
        return s.length() <= n ? s : s.substring(0, n - 1) + "~";
    }
}
