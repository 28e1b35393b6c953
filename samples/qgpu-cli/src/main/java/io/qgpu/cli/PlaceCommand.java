package io.qgpu.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.qgpu.api.Claim;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Reason;
import io.qgpu.json.Inventory;
import io.qgpu.json.QgpuJson;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementConfig;
import io.qgpu.core.placement.PlacementEngine;
import io.qgpu.core.placement.PlacementExplanation;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * {@code qgpu place}: places the claims of a JSON file, in order, on the nodes of an inventory JSON
 * file, and prints the placements and the failures (with every node's and GPU's reasons) as JSON.
 * With {@code --explain} it prints, for each claim, the table of candidates and their scores.
 */
final class PlaceCommand implements Subcommand {

    @Override
    public String name() {
        return "place";
    }

    @Override
    public String summary() {
        return "place claims (JSON) on an inventory (JSON); print placements and failures";
    }

    @Override
    public String usage() {
        return """
                usage: qgpu place --inventory FILE --claims FILE [options]

                Places the claims in file order (each one sees the ones before it) and prints
                {"placements": [...], "failures": [...]} as JSON. Exit code 0 when every claim
                was placed, 1 when some were not, 2 on bad usage or input.

                options:
                  --inventory FILE        nodes, GPUs, links and granularity rules (JSON)
                  --claims FILE           a JSON array of claims
                  --node-policy P         engine default at node level: binpack | spread | fragmentation
                                          (default binpack; fragmentation: leave the least GPU capacity
                                          unusable for the requests seen so far)
                  --gpu-policy P          engine default at GPU level: binpack | spread | fragmentation
                                          (default spread; fragmentation ranks GPUs as binpack)
                  --online-policy P[,Q]   default for online claims: node policy P, GPU policy Q (Q = P if left out)
                  --offline-policy P[,Q]  default for offline claims
                  --explain               print each claim's candidates table instead of JSON
                                          (JSON still goes to --out when given)
                  --out FILE              write the JSON there instead of standard output

                A claim's own nodePolicy/gpuPolicy fields override every default.
                --explain wraps its lines at 100 characters: one row per candidate node, one line per
                scoring term, one line per reason a node was refused.
                examples:
                  qgpu place --inventory samples/qgpu-cli/examples/inventory.json --claims samples/qgpu-cli/examples/claims-multi-gpu.json --explain
                  qgpu place --inventory samples/qgpu-cli/examples/inventory.json --claims samples/qgpu-cli/examples/claims-spread.json --gpu-policy binpack --online-policy spread,spread --offline-policy binpack""";
    }

    @Override
    public int run(List<String> argList, PrintStream out, PrintStream err) throws IOException {
        Args args = Args.parse(argList, Set.of("--explain"), Set.of("--inventory", "--claims", "--node-policy",
                "--gpu-policy", "--online-policy", "--offline-policy", "--out"));
        if (!args.positionals().isEmpty()) {
            throw new UsageException("unexpected argument " + args.positionals().get(0));
        }
        Path inventoryFile = file(args, "--inventory");
        Path claimsFile = file(args, "--claims");
        FileRoles files = new FileRoles().input("--inventory", inventoryFile).input("--claims", claimsFile);
        if (args.option("--out").isPresent()) {
            files.output("--out", out(args));
        }
        files.check();
        Inventory inventory = QgpuJson.readInventory(inventoryFile);
        List<Claim> claims = QgpuJson.readClaims(claimsFile);
        PlacementConfig.Builder cfg = PlacementConfig.builder();
        args.option("--node-policy").ifPresent(p -> cfg.nodePolicy(PlacementPolicy.fromName("--node-policy", p)));
        args.option("--gpu-policy").ifPresent(p -> cfg.gpuPolicy(PlacementPolicy.fromName("--gpu-policy", p)));
        args.option("--online-policy").ifPresent(p -> classPolicy(cfg, PriorityClass.ONLINE, "--online-policy", p));
        args.option("--offline-policy").ifPresent(p -> classPolicy(cfg, PriorityClass.OFFLINE, "--offline-policy", p));
        PlacementConfig config = cfg.build();

        Ledger ledger = ledgerOf(inventory, args.option("--inventory").orElse("--inventory"));
        PlacementEngine engine = PlacementEngine.builder(ledger).config(config).build();
        ObjectMapper mapper = QgpuJson.mapper();
        ObjectNode doc = mapper.createObjectNode();
        ArrayNode placements = mapper.createArrayNode();
        ArrayNode failures = mapper.createArrayNode();
        boolean explain = args.flag("--explain");
        for (Claim claim : claims) {
            if (explain) {
                PlacementExplanation e = engine.explain(claim);
                out.print(e.table());
            }
            PlacementResult r = engine.place(claim);
            if (r instanceof PlacementResult.Placed p) {
                placements.add(mapper.readTree(QgpuJson.writePlacement(p.placement())));
                if (explain) {
                    out.println("  placed " + claim.tenantId() + " on " + p.placement().nodeName() + " "
                            + p.placement().gpuUuids());
                    out.println();
                }
            } else {
                PlacementResult.Unschedulable u = (PlacementResult.Unschedulable) r;
                failures.add(failure(mapper, u));
                if (explain) {
                    out.println("  NOT placed: " + claim.tenantId() + " (the reasons are listed above)");
                    out.println();
                }
            }
        }
        ObjectNode policies = doc.putObject("policies");
        policies.put("node", config.nodePolicy().wireName());
        policies.put("gpu", config.gpuPolicy().wireName());
        for (PriorityClass pc : PriorityClass.values()) {
            if (config.nodePolicyByClass().containsKey(pc)) {
                ObjectNode c = policies.putObject(pc.wireName());
                c.put("node", config.nodePolicyByClass().get(pc).wireName());
                c.put("gpu", config.gpuPolicyByClass().get(pc).wireName());
            }
        }
        doc.set("placements", placements);
        doc.set("failures", failures);
        String json = mapper.writerWithDefaultPrettyPrinter().writeValueAsString(doc) + "\n";
        if (args.option("--out").isPresent()) {
            Files.writeString(out(args), json, StandardCharsets.UTF_8);
        } else if (!explain) {
            out.print(json);
        }
        if (explain) {
            out.printf("%d placed, %d not placed%n", placements.size(), failures.size());
        }
        return failures.isEmpty() ? 0 : 1;
    }

    private static void classPolicy(PlacementConfig.Builder cfg, PriorityClass pc, String flag, String value) {
        String[] parts = value.split(",", -1);
        if (parts.length > 2) {
            throw new UsageException(flag + " takes P or P,Q (node, GPU policy), got " + value);
        }
        PlacementPolicy node = PlacementPolicy.fromName(flag, parts[0].trim());
        PlacementPolicy gpu = parts.length == 2 ? PlacementPolicy.fromName(flag, parts[1].trim()) : node;
        cfg.classPolicy(pc, node, gpu);
    }

    private static Path out(Args args) {
        return OutputNames.userPath("--out", args.option("--out").get());
    }

    private static Path file(Args args, String flag) {
        return OutputNames.userPath(flag, args.option(flag).orElseThrow(() -> new UsageException("missing " + flag + " FILE")));
    }

    /** The inventory's nodes with the tenants it lists already reserved; a listing that does not fit is bad input. */
    static Ledger ledgerOf(Inventory inventory, String file) {
        try {
            return inventory.ledger();
        } catch (io.qgpu.core.ledger.LedgerStateException e) {
            throw new InvalidValueException(file + ": nodes[].gpus[].tenants", inventory.holdings().size() + " tenant(s)",
                    "do not fit the GPUs they are listed on: " + e.getMessage());
        }
    }

    private static JsonNode failure(ObjectMapper mapper, PlacementResult.Unschedulable u) {
        ObjectNode f = mapper.createObjectNode();
        f.put("tenant", u.tenantId());
        ArrayNode general = f.putArray("general");
        u.general().forEach(r -> general.add(reason(mapper, r)));
        ObjectNode nodes = f.putObject("nodes");
        u.nodes().values().stream().sorted((a, b) -> a.nodeName().compareTo(b.nodeName())).forEach(n -> {
            ObjectNode nn = nodes.putObject(n.nodeName());
            ArrayNode nr = nn.putArray("nodeReasons");
            n.nodeReasons().forEach(r -> nr.add(reason(mapper, r)));
            ObjectNode gr = nn.putObject("gpuReasons");
            n.gpuReasons().entrySet().stream().sorted(Map.Entry.comparingByKey()).forEach(e -> {
                ArrayNode a = gr.putArray(e.getKey());
                e.getValue().forEach(r -> a.add(reason(mapper, r)));
            });
        });
        f.put("summary", u.summary());
        return f;
    }

    private static ObjectNode reason(ObjectMapper mapper, Reason r) {
        ObjectNode o = mapper.createObjectNode();
        o.put("code", r.code().name());
        o.put("target", r.target());
        if (r.quantified()) {
            o.put("requested", r.requested());
            o.put("available", r.available());
            o.put("shortBy", r.shortfall());
        }
        if (!r.detail().isEmpty()) {
            o.put("detail", r.detail());
        }
        return o;
    }
}
