package io.qgpu.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.jna.Function;
import com.sun.jna.NativeLibrary;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.nvml.Nvml;
import io.qgpu.nvml.NvmlLibraryException;
import io.qgpu.nvml.NvmlReturn;
import io.qgpu.nvml.discovery.NvmlDeviceInfo;
import io.qgpu.nvml.discovery.NvmlDiscovery;
import io.qgpu.nvml.discovery.NvmlInventory;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * {@code qgpu inventory}: the GPUs NVML sees and the link of every pair, as a table and a matrix like
 * {@code nvidia-smi topo -m}, or as JSON.
 */
final class InventoryCommand implements Subcommand {
    static final String FAKE_SELECT = "fake_nvml_select_machine";

    @Override
    public String name() {
        return "inventory";
    }

    @Override
    public String summary() {
        return "list the local GPUs and their topology through NVML";
    }

    @Override
    public String usage() {
        return """
                usage: qgpu inventory [--json] [--nvml-lib PATH] [--machine NAME] [--node NAME]

                Discovers the GPUs of this machine through NVML (libnvidia-ml) and prints them with a
                topology matrix like `nvidia-smi topo -m` (NV# = NVLink lanes, PIX, PXB, PHB, NODE, SYS).

                  --json            print JSON instead of tables
                  --nvml-lib PATH   load NVML from PATH instead of libnvidia-ml.so.1 from the loader's path
                                    (or the system property qgpu.nvml.library). To try the command without a
                                    GPU, point it at the fake library the build compiles:
                                    qgpu-nvml/target/fake-nvml/libnvidia-ml.so.1
                  --machine NAME    with the fake library only: the machine it plays,
                                    dgx-h100 (default), t4x4 or a100-bridged
                  --node NAME       node name to report (default: $HOSTNAME, else "local")
                """;
    }

    @Override
    public int run(List<String> args, PrintStream out, PrintStream err) throws Exception {
        Args a = Args.parse(args, Set.of("--json"), Set.of("--nvml-lib", "--machine", "--node"));
        if (!a.positionals().isEmpty()) {
            throw new UsageException("unexpected argument " + a.positionals().get(0));
        }
        Nvml.Builder builder = Nvml.builder();
        if (a.option("--nvml-lib").isPresent()) {
            Path lib = Path.of(a.option("--nvml-lib").get());
            if (!Files.isRegularFile(lib)) {
                throw new UsageException("--nvml-lib " + lib + ": no such file");
            }
            builder.libraryPath(lib);
        }
        String node = a.option("--node").orElseGet(() -> {
            String h = System.getenv("HOSTNAME");
            return h == null || h.isBlank() ? "local" : h;
        });
        try (Nvml nvml = open(builder, a.option("--nvml-lib").isPresent())) {
            if (a.option("--machine").isPresent()) {
                selectFakeMachine(nvml.library(), a.option("--machine").get());
            }
            NvmlInventory inv = NvmlDiscovery.builder().session(nvml).build().inventory(node);
            if (a.flag("--json")) {
                ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
                out.println(mapper.writeValueAsString(json(mapper, inv, nvml.library())));
            } else {
                printText(inv, out);
            }
        }
        return 0;
    }

    /** Opens NVML; without a library on this machine, says how to point the CLI at one. */
    private static Nvml open(Nvml.Builder builder, boolean libGiven) {
        try {
            return builder.open();
        } catch (NvmlLibraryException e) {
            if (libGiven || e.result() != NvmlReturn.LIBRARY_NOT_FOUND) {
                throw e;
            }
            throw new UsageException("no NVML library (libnvidia-ml.so.1) on this machine: is the NVIDIA driver installed?"
                    + " Give its path with --nvml-lib PATH, or try the fake library the build compiles:"
                    + " qgpu inventory --nvml-lib qgpu-nvml/target/fake-nvml/libnvidia-ml.so.1 --machine t4x4");
        }
    }

    /** Asks the fake library to play a machine; refused for any other library. */
    static void selectFakeMachine(String library, String machine) {
        Function select;
        try {
            select = NativeLibrary.getInstance(library).getFunction(FAKE_SELECT);
        } catch (UnsatisfiedLinkError e) {
            throw new UsageException("--machine works only with the fake NVML library "
                    + "(qgpu-nvml/target/fake-nvml/libnvidia-ml.so.1); " + library + " does not export " + FAKE_SELECT);
        }
        if (select.invokeInt(new Object[] {machine}) != 0) {
            throw new UsageException("--machine " + machine + ": the fake library knows dgx-h100, t4x4 and a100-bridged");
        }
    }

    static ObjectNode json(ObjectMapper mapper, NvmlInventory inv, String library) {
        ObjectNode root = mapper.createObjectNode();
        root.put("node", inv.node().name());
        root.put("library", library);
        root.put("driverVersion", inv.driverVersion());
        root.put("nvmlVersion", inv.nvmlVersion());
        ArrayNode gpus = root.putArray("gpus");
        for (int i = 0; i < inv.devices().size(); i++) {
            NvmlDeviceInfo d = inv.devices().get(i);
            GpuDevice g = inv.node().gpus().get(i);
            ObjectNode o = gpus.addObject();
            o.put("index", d.index());
            o.put("uuid", d.uuid());
            o.put("name", d.name());
            o.put("memoryBytes", d.memoryTotalBytes());
            o.put("memoryMiB", d.memoryTotalBytes() / GpuDevice.MIB);
            o.put("reservedBytes", d.memoryReservedBytes());
            o.put("minorNumber", d.minorNumber());
            o.put("pciBusId", d.pciBusId());
            o.put("computeCapability", d.computeCapability().toString());
            ObjectNode mig = o.putObject("migMode");
            mig.put("current", d.migMode().current().name());
            mig.put("pending", d.migMode().pending().name());
            o.put("numaNode", d.numaNode());
            o.put("activeNvLinks", d.activeNvLinks());
            o.put("nvSwitchLinks", d.nvSwitchLinks());
            o.put("health", g.health().name());
        }
        ArrayNode matrix = root.putArray("topology");
        int n = inv.devices().size();
        for (int a = 0; a < n; a++) {
            ArrayNode row = matrix.addArray();
            for (int b = 0; b < n; b++) {
                row.add(a == b ? "X" : inv.link(a, b).label());
            }
        }
        ArrayNode links = root.putArray("links");
        for (int a = 0; a < n; a++) {
            for (int b = a + 1; b < n; b++) {
                GpuLink l = inv.link(a, b);
                ObjectNode o = links.addObject();
                o.put("a", inv.devices().get(a).index());
                o.put("b", inv.devices().get(b).index());
                o.put("label", l.label());
                if (l instanceof GpuLink.NvLink nv) {
                    o.put("type", "nvlink");
                    o.put("lanes", nv.lanes());
                } else if (l instanceof GpuLink.Pcie p) {
                    o.put("type", "pcie");
                    o.put("level", p.level().name());
                }
            }
        }
        ArrayNode unreachable = root.putArray("unreachable");
        inv.unreachable().forEach(unreachable::add);
        return root;
    }

    static void printText(NvmlInventory inv, PrintStream out) {
        out.printf("node %s   driver %s   NVML %s%n%n", inv.node().name(), inv.driverVersion(), inv.nvmlVersion());
        String fmt = "%-4s %-40s %-24s %10s  %-16s %5s %4s %-13s %4s %6s %-9s%n";
        out.printf(fmt, "GPU", "UUID", "NAME", "MEMORY", "PCI BUS ID", "MINOR", "CC", "MIG", "NUMA", "NVLINK", "HEALTH");
        for (NvmlDeviceInfo d : inv.devices()) {
            String mig = switch (d.migMode().current()) {
                case NOT_SUPPORTED -> "n/a";
                case DISABLED -> d.migMode().pending() == d.migMode().current() ? "disabled" : "disabled*";
                case ENABLED -> d.migMode().pending() == d.migMode().current() ? "enabled" : "enabled*";
            };
            out.printf(fmt, d.index(), d.uuid(), d.name(),
                    String.format(Locale.ROOT, "%.1f GiB", d.memoryTotalBytes() / (double) GpuDevice.GIB),
                    d.pciBusId(), d.minorNumber(), d.computeCapability(), mig,
                    d.numaNode() < 0 ? "N/A" : Integer.toString(d.numaNode()), d.activeNvLinks(), d.health());
        }
        if (!inv.unreachable().isEmpty()) {
            out.println();
            inv.unreachable().forEach(u -> out.println("unreachable: " + u));
        }
        out.println();
        int n = inv.devices().size();
        StringBuilder head = new StringBuilder(String.format("%-7s", ""));
        for (NvmlDeviceInfo d : inv.devices()) {
            head.append(String.format("%-7s", "GPU" + d.index()));
        }
        out.println(head.append("NUMA Affinity").toString().stripTrailing());
        for (int a = 0; a < n; a++) {
            StringBuilder row = new StringBuilder(String.format("%-7s", "GPU" + inv.devices().get(a).index()));
            for (int b = 0; b < n; b++) {
                row.append(String.format("%-7s", a == b ? " X" : inv.link(a, b).label()));
            }
            int numa = inv.devices().get(a).numaNode();
            row.append(numa < 0 ? "N/A" : Integer.toString(numa));
            out.println(row);
        }
        out.println();
        out.println("Legend:");
        out.println("  X    = the GPU itself");
        out.println("  NV#  = NVLink with # lanes (through NVSwitches on switched systems)");
        out.println("  PSB  = PCIe, same board");
        out.println("  PIX  = PCIe, behind one PCIe switch");
        out.println("  PXB  = PCIe, across several PCIe switches, no host bridge");
        out.println("  PHB  = PCIe, through a host bridge (the CPU)");
        out.println("  NODE = PCIe and the link between host bridges of one NUMA node");
        out.println("  SYS  = PCIe and the interconnect between NUMA nodes (QPI/UPI/Infinity Fabric)");
    }
}
