package io.qgpu.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.jna.Function;
import com.sun.jna.NativeLibrary;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.GranularityRules;
import io.qgpu.json.Inventory;
import io.qgpu.json.QgpuJson;
import io.qgpu.nvml.Nvml;
import io.qgpu.nvml.NvmlException;
import io.qgpu.nvml.discovery.MigInstance;

import io.qgpu.nvml.NvmlLibraryException;
import io.qgpu.nvml.NvmlReturn;
import io.qgpu.nvml.discovery.NvmlDeviceInfo;
import io.qgpu.nvml.discovery.NvmlDiscovery;
import io.qgpu.nvml.discovery.NvmlInventory;
import io.qgpu.nvml.discovery.NvmlPairFacts;
import io.qgpu.nvml.usage.NvmlUsageSampler;
import io.qgpu.nvml.usage.ProcessUsage;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;

/**
 * {@code qgpu inventory}: the GPUs NVML sees, their MIG instances and the link of every pair, as a table
 * and a matrix like {@code nvidia-smi topo -m} (see {@link InventoryText}), or as JSON with the processes of
 * each GPU as well.
 */
final class InventoryCommand implements Subcommand {
    static final String FAKE_SELECT = "fake_nvml_select_machine";
    static final List<String> FAKE_MACHINES = List.of("dgx-h100", "t4x4", "a100-bridged", "a100-mig", "x86-numa",
            "h100-vm");

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
                usage: qgpu inventory [--json | --as-inventory [--rules NAME]] [--nvml-lib PATH] [--machine NAME] [--node NAME]

                Discovers the GPUs of this machine through NVML (libnvidia-ml) and prints them, their MIG
                instances, and a topology matrix like `nvidia-smi topo -m` (NV# = NVLink lanes, PIX, PXB,
                PHB, NODE, SYS) with the CPU and NUMA affinity of each GPU.

                  --json            print JSON instead of tables: every NVML fact, the processes of each GPU
                  --as-inventory    print this node as an inventory file (docs/formats.md), the format that
                                    place, ledger and the scheduler extender read (redirect it to
                                    a file and give that file to them)
                  --rules NAME      with --as-inventory: the granularity rules it names: qgpu (default),
                                    hami or gpu-manager
                  --nvml-lib PATH   load NVML from PATH instead of libnvidia-ml.so.1 from the loader's path
                                    (or the system property qgpu.nvml.library). To try the command without a
                                    GPU, point it at the fake library the build compiles:
                                    qgpu-nvml/target/fake-nvml/libnvidia-ml.so.1
                  --machine NAME    with the fake library only: the machine it plays,
                                    dgx-h100 (default), t4x4, a100-bridged, a100-mig, x86-numa or h100-vm
                  --node NAME       node name to report (default: $HOSTNAME, else "local")
                """;
    }

    @Override
    public int run(List<String> args, PrintStream out, PrintStream err) throws Exception {
        Args a = Args.parse(args, Set.of("--json", "--as-inventory"), Set.of("--nvml-lib", "--machine", "--node", "--rules"));
        if (!a.positionals().isEmpty()) {
            throw new UsageException("unexpected argument " + a.positionals().get(0));
        }
        if (a.flag("--json") && a.flag("--as-inventory")) {
            throw new UsageException("--json and --as-inventory print different things: give one");
        }
        if (a.option("--rules").isPresent() && !a.flag("--as-inventory")) {
            throw new UsageException("--rules goes with --as-inventory");
        }
        String rulesName = a.option("--rules").orElse("qgpu");
        if (!List.of("qgpu", "hami", "gpu-manager").contains(rulesName)) {
            throw new UsageException("--rules " + rulesName + ": must be qgpu, hami or gpu-manager");
        }
        GranularityRules rules = GranularityRules.preset(rulesName);
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
            // the kubelet names its node by the host name in lower case
            return h == null || h.isBlank() ? "local" : h.toLowerCase(java.util.Locale.ROOT);
        });
        if (!io.qgpu.api.Validate.isDnsSubdomain(node)) {
            throw new UsageException((a.option("--node").isPresent() ? "--node " : "$HOSTNAME = ") + node
                    + ": not a Kubernetes node name (a DNS subdomain: lower-case letters, digits, '-' and '.')"
                    + (a.option("--node").isPresent() ? "" : "; give the node's name with --node NAME"));
        }
        try (Nvml nvml = open(builder, a.option("--nvml-lib").orElse(null))) {
            if (a.option("--machine").isPresent()) {
                selectFakeMachine(nvml.library(), a.option("--machine").get());
            }
            NvmlInventory inv = NvmlDiscovery.builder().session(nvml).build().inventory(node);
            if (a.flag("--as-inventory")) {
                out.print(QgpuJson.writeInventory(new Inventory(rules, List.of(inv.node()), List.of())));
            } else if (a.flag("--json")) {
                ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
                NvmlUsageSampler sampler = NvmlUsageSampler.builder(nvml).build();
                out.println(mapper.writeValueAsString(json(mapper, inv, nvml.library(), sampler)));
            } else {
                InventoryText.print(inv, out);
            }
        }
        return 0;
    }

    /** Opens NVML; without a library on this machine, says how to point the CLI at one. */
    private static Nvml open(Nvml.Builder builder, String libGiven) {
        try {
            return builder.open();
        } catch (NvmlLibraryException e) {
            if (libGiven != null && e.result() == NvmlReturn.LIBRARY_NOT_FOUND) {
                // the binding's own text points at its system property; the CLI's way is --nvml-lib
                Throwable cause = e.getCause() == null ? e : e.getCause();
                String why = String.valueOf(cause.getMessage()).lines().findFirst().orElse(e.result().name());
                throw new UsageException("--nvml-lib " + libGiven + ": cannot be loaded as NVML (" + why + ")");
            }
            if (libGiven != null || e.result() != NvmlReturn.LIBRARY_NOT_FOUND) {
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
            throw new UsageException("--machine " + machine + ": the fake library knows " + String.join(", ", FAKE_MACHINES));
        }
    }

    static ObjectNode json(ObjectMapper mapper, NvmlInventory inv, String library, NvmlUsageSampler sampler) {
        ObjectNode root = mapper.createObjectNode();
        root.put("node", inv.node().name());
        root.put("library", library);
        root.put("driverVersion", inv.driverVersion());
        root.put("nvmlVersion", inv.nvmlVersion());
        ArrayNode gpus = root.putArray("gpus");
        for (NvmlDeviceInfo d : inv.devices()) {
            ObjectNode o = gpus.addObject();
            o.put("index", d.index());
            o.put("uuid", d.uuid());
            o.put("name", d.name());
            o.put("memoryBytes", d.memoryTotalBytes());
            o.put("memoryMiB", d.memoryKnown() ? d.memoryTotalBytes() / GpuDevice.MIB : -1);
            o.put("reservedBytes", d.memoryReservedBytes());
            o.put("minorNumber", d.minorNumber());
            o.put("pciBusId", d.pciBusId());
            o.put("computeCapability", d.computeCapability().toString());
            ObjectNode mig = o.putObject("migMode");
            mig.put("current", d.migMode().current().name());
            mig.put("pending", d.migMode().pending().name());
            o.put("numaNode", d.numaNode());
            o.put("gpuNumaNode", d.gpuNumaNode());
            o.put("numaAffinity", d.numaAffinityText());
            o.put("cpuAffinity", d.cpuAffinityText());
            o.put("activeNvLinks", d.activeNvLinks());
            o.put("nvSwitchLinks", d.nvSwitchLinks());
            o.put("unknownNvLinks", d.unknownNvLinks());
            o.put("health", d.health().name());
            ArrayNode instances = o.putArray("migInstances");
            for (MigInstance m : d.migInstances()) {
                ObjectNode mo = instances.addObject();
                mo.put("uuid", m.uuid());
                mo.put("name", m.name());
                mo.put("slot", m.slot());
                mo.put("gpuInstanceId", m.gpuInstanceId());
                mo.put("computeInstanceId", m.computeInstanceId());
                mo.put("memoryBytes", m.memoryTotalBytes());
                mo.put("nodeIndex", m.nodeIndex());
            }
            processes(o, sampler, d.uuid());
        }
        ArrayNode matrix = root.putArray("topology");
        int n = inv.devices().size();
        for (int a = 0; a < n; a++) {
            ArrayNode row = matrix.addArray();
            for (int b = 0; b < n; b++) {
                row.add(a == b ? "X" : inv.gpuLink(a, b).label());
            }
        }
        ArrayNode links = root.putArray("links");
        for (NvmlPairFacts p : inv.pairs()) {
            GpuLink l = p.link();
            ObjectNode o = links.addObject();
            o.put("a", inv.devices().get(p.a()).index());
            o.put("b", inv.devices().get(p.b()).index());
            o.put("label", l.label());
            if (l instanceof GpuLink.NvLink nv) {
                o.put("type", "nvlink");
                o.put("lanes", nv.lanes());
            } else if (l instanceof GpuLink.Pcie pcie) {
                o.put("type", "pcie");
                o.put("level", pcie.level().name());
            }
            o.put("commonAncestor", p.commonAncestor().map(Enum::name).orElse(null));
            o.put("directNvLinks", p.directNvLinks());
            o.put("switchNvLinks", p.switchNvLinks());
        }
        ArrayNode devices = root.putArray("devices");
        for (GpuDevice g : inv.node().gpus()) {
            ObjectNode o = devices.addObject();
            o.put("index", g.index());
            o.put("uuid", g.uuid());
            o.put("model", g.model());
            o.put("memoryBytes", g.memoryBytes());
            o.put("numaNode", g.numaNode());
            o.put("migInstance", inv.migInstance(g.uuid()).isPresent());
        }
        ArrayNode unreachable = root.putArray("unreachable");
        inv.unreachable().forEach(unreachable::add);
        return root;
    }

    /** The GPU's processes, or the NVML error that kept them from us. */
    private static void processes(ObjectNode gpu, NvmlUsageSampler sampler, String uuid) {
        List<ProcessUsage> list;
        try {
            list = sampler.processes(uuid);
        } catch (NvmlException e) {
            gpu.put("processesError", e.result().cName() + " from " + e.function());
            return;
        }
        ArrayNode out = gpu.putArray("processes");
        for (ProcessUsage p : list) {
            ObjectNode o = out.addObject();
            o.put("pid", p.pid());
            o.put("usedMemoryBytes", p.usedMemoryBytes());
            o.put("migInstance", p.migInstance().orElse(null));
            o.put("mps", p.mps());
        }
    }
}
