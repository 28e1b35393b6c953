package io.qgpu.cli;

import io.qgpu.api.QgpuException;
import java.io.PrintStream;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The {@code qgpu} command-line tool. {@code qgpu help} lists the subcommands.
 */
public final class Main {

    private Main() {
    }

    /** Every subcommand, in the order {@code help} lists them. */
    static Map<String, Subcommand> subcommands() {
        Map<String, Subcommand> all = new LinkedHashMap<>();
        for (Subcommand s : List.<Subcommand>of(
                new SimulateCommand(),
                new LedgerCommand(),
                new InventoryCommand()
        )) {
            all.put(s.name(), s);
        }
        return all;
    }

    public static void main(String[] args) {
        System.exit(run(List.of(args), System.out, System.err));
    }

    /** Runs the tool and returns its exit code (tests call this). */
    public static int run(List<String> args, PrintStream out, PrintStream err) {
        Map<String, Subcommand> all = subcommands();
        if (args.isEmpty() || args.get(0).equals("help") || args.get(0).equals("--help") || args.get(0).equals("-h")) {
            if (args.size() > 1 && all.containsKey(args.get(1))) {
                out.println(all.get(args.get(1)).usage());
                return 0;
            }
            out.println("usage: qgpu <command> [options]   (qgpu help <command> for details)");
            out.println();
            all.values().forEach(s -> out.printf("  %-10s %s%n", s.name(), s.summary()));
            return args.isEmpty() ? 2 : 0;
        }
        Subcommand s = all.get(args.get(0));
        if (s == null) {
            err.println("qgpu: unknown command '" + args.get(0) + "'; known: " + String.join(", ", all.keySet()));
            return 2;
        }
        List<String> rest = args.subList(1, args.size());
        if (rest.contains("--help") || rest.contains("-h")) {
            out.println(s.usage());
            return 0;
        }
        try {
            return s.run(rest, out, err);
        } catch (UsageException e) {
            err.println("qgpu " + s.name() + ": " + e.getMessage());
            err.println(s.usage());
            return 2;
        } catch (QgpuException e) {
            err.println("qgpu " + s.name() + ": " + e.getMessage());
            return 2;
        } catch (Exception e) {
            err.println("qgpu " + s.name() + ": " + e);
            return 2;
        }
    }
}
