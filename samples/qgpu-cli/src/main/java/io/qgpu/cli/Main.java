package io.qgpu.cli;

import io.qgpu.api.QgpuException;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.file.AccessDeniedException;
import java.nio.file.NoSuchFileException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

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
                new PlaceCommand(),
                new InventoryCommand(),
                new ReplayCommand()
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
        if (!args.isEmpty() && (args.get(0).equals("--version") || args.get(0).equals("version"))) {
            out.println("qgpu " + version());
            return 0;
        }
        if (args.isEmpty() || args.get(0).equals("help") || args.get(0).equals("--help") || args.get(0).equals("-h")) {
            if (args.size() > 1 && all.containsKey(args.get(1))) {
                out.println(all.get(args.get(1)).usage());
                return 0;
            }
            if (args.size() > 1 && !args.get(1).equals("help")) {
                err.println("qgpu help: unknown command '" + OutputNames.shown(args.get(1)) + "'; known: "
                        + String.join(", ", all.keySet()));
                return 2;
            }
            out.println("usage: qgpu <command> [options]   (qgpu help <command> for details)");
            out.println();
            all.values().forEach(s -> out.printf("  %-10s %s%n", s.name(), s.summary()));
            out.printf("  %-10s %s%n", "help", "this list; qgpu help <command> (or qgpu <command> --help) for a command's flags");
            out.printf("  %-10s %s%n", "--version", "print the version");
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
        } catch (java.nio.file.InvalidPathException e) {
            err.println("qgpu " + s.name() + ": \"" + OutputNames.shown(e.getInput()) + "\" is not a path this system accepts ("
                    + e.getReason() + ")");
            return 2;
        } catch (NoSuchFileException e) {
            err.println("qgpu " + s.name() + ": " + e.getFile() + ": no such file or directory");
            return 2;
        } catch (AccessDeniedException e) {
            err.println("qgpu " + s.name() + ": " + e.getFile() + ": permission denied");
            return 2;
        } catch (IOException e) {
            err.println("qgpu " + s.name() + ": " + e.getMessage());
            return 2;
        } catch (Exception e) {
            err.println("qgpu " + s.name() + ": " + e);
            return 2;
        }
    }

    /** The version Maven filtered into {@code version.properties} (the project version). */
    static String version() {
        Properties p = new Properties();
        try (InputStream in = Main.class.getResourceAsStream("version.properties")) {
            if (in != null) {
                p.load(in);
            }
        } catch (IOException e) {
            return "unknown";
        }
        return p.getProperty("version", "unknown");
    }
}
