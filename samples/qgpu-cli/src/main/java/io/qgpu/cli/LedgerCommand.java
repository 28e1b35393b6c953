package io.qgpu.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuState;
import io.qgpu.api.Health;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Slice;
import io.qgpu.core.json.Inventory;
import io.qgpu.core.json.QgpuJson;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.ledger.ReserveResult;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * {@code qgpu ledger INVENTORY.json OPERATIONS.json}: applies reserve/release/health operations to
 * a ledger and prints every refusal with its reasons and the resulting state.
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

                  INVENTORY.json   {"rules": {"name": "qgpu"}, "nodes": [...]}  (see samples/qgpu-cli/examples/ledger-inventory.json)
                  OPERATIONS.json  a JSON array, applied in order:
                                     {"op": "reserve", "node": N, "gpus": [UUID...], "claim": {...}}
                                     {"op": "release", "tenant": T}
                                     {"op": "health", "gpu": UUID, "health": "unhealthy"|"healthy"}
                  --json           print the final state as a ledger snapshot (JSON) instead of a table
                  --snapshot FILE  also write the snapshot to FILE

                Exit code 0 when every operation was read (refusals are results, not errors),
                2 on unreadable input.""";
    }

    @Override
    public int run(List<String> argv, PrintStream out, PrintStream err) throws Exception {
        Args args = Args.parse(argv, Set.of("--json"), Set.of("--snapshot"));
        Path inventoryFile = Path.of(args.positional(0, "INVENTORY.json"));
        Path opsFile = Path.of(args.positional(1, "OPERATIONS.json"));
        if (args.positionals().size() > 2) {
            throw new UsageException("unexpected argument " + args.positionals().get(2));
        }
        Inventory inventory = QgpuJson.readInventory(Files.readString(inventoryFile));
        Ledger ledger = PlaceCommand.ledgerOf(inventory, inventoryFile.toString());
        JsonNode ops = new ObjectMapper().readTree(Files.readString(opsFile));
        if (ops == null || !ops.isArray()) {
            throw new InvalidValueException("operations", opsFile.toString(), "must be a JSON array");
        }
        boolean json = args.flag("--json");
        PrintStream log = json ? err : out;
        int refused = 0;
        for (int i = 0; i < ops.size(); i++) {
            JsonNode op = ops.get(i);
            String kind = text(op, "op", i);
            switch (kind) {
                case "reserve" -> {
                    Placement p = placement(op, i, ledger);
                    ReserveResult r = ledger.reserve(p);
                    if (r instanceof ReserveResult.Refused f) {
                        refused++;
                        log.printf("#%d reserve %s on %s %s: REFUSED%n", i, p.tenantId(), p.nodeName(), p.gpuUuids());
                        f.reasons().forEach(reason -> log.println("      - " + reason.message()));
                    } else {
                        log.printf("#%d reserve %s on %s %s: ok%n", i, p.tenantId(), p.nodeName(), p.gpuUuids());
                    }
                }
                case "release" -> {
                    String tenant = text(op, "tenant", i);
                    boolean was = ledger.release(tenant).isPresent();
                    log.printf("#%d release %s: %s%n", i, tenant, was ? "ok" : "not held (no-op)");
                }
                case "health" -> {
                    String gpu = text(op, "gpu", i);
                    String h = text(op, "health", i);
                    Health health = h.equalsIgnoreCase("healthy") ? Health.HEALTHY
                            : h.equalsIgnoreCase("unhealthy") ? Health.UNHEALTHY
                            : failHealth(i, h);
                    List<Placement> displaced = ledger.setHealth(gpu, health);
                    log.printf("#%d health %s -> %s%s%n", i, gpu, health.name().toLowerCase(),
                            displaced.isEmpty() ? "" : "; displaced: " + displaced.stream().map(Placement::tenantId).toList());
                }
                default -> throw new InvalidValueException("operations[" + i + "].op", kind,
                        "must be reserve, release or health");
            }
        }
        String snapshot = QgpuJson.writeSnapshot(ledger.snapshot());
        if (args.option("--snapshot").isPresent()) {
            Files.writeString(Path.of(args.option("--snapshot").get()), snapshot);
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

    private static Health failHealth(int i, String h) {
        throw new InvalidValueException("operations[" + i + "].health", h, "must be healthy or unhealthy");
    }

    private static String text(JsonNode op, String field, int i) {
        JsonNode v = op.get(field);
        if (v == null || !v.isTextual()) {
            throw new InvalidValueException("operations[" + i + "]." + field, v == null ? null : v.toString(),
                    "is required and must be a string");
        }
        return v.asText();
    }

    private static Placement placement(JsonNode op, int i, Ledger ledger) {
        String node = text(op, "node", i);
        JsonNode claimJson = op.get("claim");
        if (claimJson == null || !claimJson.isObject()) {
            throw new InvalidValueException("operations[" + i + "].claim", null, "is required and must be an object");
        }
        Claim claim = QgpuJson.readClaim(claimJson.toString());
        JsonNode gpus = op.get("gpus");
        if (gpus == null || !gpus.isArray()) {
            throw new InvalidValueException("operations[" + i + "].gpus", null, "is required and must be an array of UUIDs");
        }
        List<Slice> slices = new ArrayList<>();
        for (JsonNode g : gpus) {
            String uuid = g.asText();
            long memory = claim.memoryPerGpuBytes();
            if (claim.exclusive()) {
                memory = ledger.node(node).flatMap(n -> n.node().gpu(uuid)).map(GpuDevice::memoryBytes).orElse(1L);
            }
            slices.add(new Slice(uuid, memory, claim.computeRequest(), claim.computeLimit()));
        }
        return new Placement(claim, node, slices);
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
