package io.qgpu.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import javax.xml.XMLConstants;
import javax.xml.parsers.DocumentBuilder;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * Compares {@code qgpu inventory --json} with {@code nvidia-smi -q -x} and {@code nvidia-smi topo -m}:
 * GPU count, and per GPU its UUID, name, memory, minor number, PCI bus id, MIG mode, index order and
 * running processes (pids), then its CPU and NUMA affinity and the link label of every pair. Used by {@code samples/nvml-check/check-real-gpu.sh}.
 *
 * <pre>
 * java -cp ... io.qgpu.cli.NvmlSmiCheck inventory.json smi.xml [topo.txt]
 * </pre>
 *
 * Exit code 0 when everything matches, 1 on a mismatch, 2 when an input cannot be read.
 */
public final class NvmlSmiCheck {

    private NvmlSmiCheck() {
    }

    public static void main(String[] args) {
        if (args.length < 2 || args.length > 3) {
            System.err.println("usage: NvmlSmiCheck INVENTORY.json NVIDIA-SMI-Q-X.xml [NVIDIA-SMI-TOPO-M.txt]");
            System.exit(2);
        }
        try {
            String inv = Files.readString(Path.of(args[0]));
            String xml = Files.readString(Path.of(args[1]));
            String topo = args.length == 3 ? Files.readString(Path.of(args[2])) : null;
            System.exit(check(inv, xml, topo, System.out));
        } catch (IOException | RuntimeException e) {
            System.err.println("NvmlSmiCheck: " + e);
            System.exit(2);
        }
    }

    /** One GPU as nvidia-smi -q -x describes it. */
    record SmiGpu(String uuid, String name, long totalMiB, int minor, String busId, String migCurrent,
                  String migPending, List<Long> pids) {
    }

    /** Runs every check, printing one line each; returns the exit code. */
    static int check(String inventoryJson, String smiXml, String topoText, PrintStream out) throws IOException {
        JsonNode inv = new ObjectMapper().readTree(inventoryJson);
        List<SmiGpu> smi = parseSmi(smiXml);
        Checks c = new Checks(out);
        JsonNode gpus = inv.path("gpus");
        c.expect("GPU count", smi.size(), gpus.size());
        if (inv.path("unreachable").size() > 0) {
            c.fail("unreachable GPUs in the inventory: " + inv.path("unreachable"));
        }
        Map<String, JsonNode> byUuid = new HashMap<>();
        gpus.forEach(g -> byUuid.put(g.path("uuid").asText(), g));
        for (int i = 0; i < smi.size(); i++) {
            SmiGpu s = smi.get(i);
            JsonNode g = byUuid.get(s.uuid);
            if (g == null) {
                c.fail("GPU " + s.uuid + " (nvidia-smi position " + i + ") is missing from the inventory");
                continue;
            }
            String who = "GPU " + g.path("index").asInt() + " " + s.uuid;
            c.expect(who + " index (nvidia-smi order)", i, g.path("index").asInt());
            c.expect(who + " name", s.name, g.path("name").asText());
            c.expect(who + " minor number", s.minor, g.path("minorNumber").asInt());
            c.expect(who + " PCI bus id", normalizeBusId(s.busId), normalizeBusId(g.path("pciBusId").asText()));
            long totalMiB = g.path("memoryMiB").asLong();
            if (totalMiB < 0) {
                out.println("skipped   " + who + " memory: NVML refused it to this process (MIG seen from a container)");
            } else {
                long usableMiB = (g.path("memoryBytes").asLong() - g.path("reservedBytes").asLong()) >> 20;
                boolean memOk = Math.abs(s.totalMiB - totalMiB) <= 1 || Math.abs(s.totalMiB - usableMiB) <= 1;
                c.check(memOk, who + " memory: nvidia-smi " + s.totalMiB + " MiB, inventory " + totalMiB
                        + " MiB total / " + usableMiB + " MiB without reserved");
            }
            if (g.has("processes")) {
                List<Long> ours = new ArrayList<>();
                g.path("processes").forEach(p -> ours.add(p.path("pid").asLong()));
                ours.sort(null);
                c.expect(who + " processes (pids)", s.pids, ours);
            } else {
                c.fail(who + " processes: the inventory has none (" + g.path("processesError").asText() + ")");
            }
            c.expect(who + " MIG current", s.migCurrent, mig(g.path("migMode").path("current").asText()));
            c.expect(who + " MIG pending", s.migPending, mig(g.path("migMode").path("pending").asText()));
        }
        if (topoText != null) {
            Map<Integer, String[]> affinity = parseAffinity(topoText);
            for (JsonNode g : gpus) {
                int idx = g.path("index").asInt();
                String[] theirs = affinity.get(idx);
                if (theirs == null) {
                    c.fail("GPU" + idx + ": no CPU/NUMA affinity in the nvidia-smi topo -m output");
                    continue;
                }
                c.expect("GPU" + idx + " CPU affinity", theirs[0], g.path("cpuAffinity").asText());
                c.expect("GPU" + idx + " NUMA affinity", theirs[1], g.path("numaAffinity").asText());
            }
            Map<Integer, Map<Integer, String>> smiTopo = parseTopo(topoText);
            JsonNode matrix = inv.path("topology");
            for (int a = 0; a < gpus.size(); a++) {
                for (int b = 0; b < gpus.size(); b++) {
                    if (a == b) {
                        continue;
                    }
                    int ia = gpus.get(a).path("index").asInt();
                    int ib = gpus.get(b).path("index").asInt();
                    String theirs = smiTopo.getOrDefault(ia, Map.of()).get(ib);
                    String ours = matrix.get(a).get(b).asText();
                    c.expect("link GPU" + ia + "-GPU" + ib, theirs == null ? "(absent)" : canonical(theirs), ours);
                }
            }
        }
        out.println(c.failures == 0 ? "ALL " + c.passed + " CHECKS PASSED"
                : c.failures + " OF " + (c.passed + c.failures) + " CHECKS FAILED");
        return c.failures == 0 ? 0 : 1;
    }

    private static final class Checks {
        private final PrintStream out;
        int passed;
        int failures;

        Checks(PrintStream out) {
            this.out = out;
        }

        void expect(String what, Object smi, Object inventory) {
            check(String.valueOf(smi).equals(String.valueOf(inventory)),
                    what + ": nvidia-smi " + smi + ", inventory " + inventory);
        }

        void check(boolean ok, String line) {
            if (ok) {
                passed++;
                out.println("ok        " + line);
            } else {
                failures++;
                out.println("MISMATCH  " + line);
            }
        }

        void fail(String line) {
            check(false, line);
        }
    }

    static String normalizeBusId(String id) {
        String s = id.trim().toLowerCase(Locale.ROOT);
        int colon = s.indexOf(':');
        if (colon >= 0 && colon < 8) {
            s = "0".repeat(8 - colon) + s; // 4-digit legacy domain to 8 digits
        }
        return s;
    }

    private static String mig(String state) {
        return switch (state) {
            case "ENABLED" -> "Enabled";
            case "DISABLED" -> "Disabled";
            default -> "N/A";
        };
    }

    private static String canonical(String smiLabel) {
        return smiLabel.equals("SOC") ? "SYS" : smiLabel;
    }

    static List<SmiGpu> parseSmi(String xml) {
        Document doc;
        try {
            DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
            f.setFeature(XMLConstants.FEATURE_SECURE_PROCESSING, true);
            // nvidia-smi names a DTD (nvsmi_device_vN.dtd) that is not on disk: never fetch it
            f.setFeature("http://apache.org/xml/features/nonvalidating/load-external-dtd", false);
            f.setValidating(false);
            f.setExpandEntityReferences(false);
            DocumentBuilder b = f.newDocumentBuilder();
            doc = b.parse(new ByteArrayInputStream(xml.getBytes(StandardCharsets.UTF_8)));
        } catch (Exception e) {
            throw new IllegalArgumentException("cannot parse nvidia-smi XML: " + e.getMessage(), e);
        }
        List<SmiGpu> out = new ArrayList<>();
        NodeList gpus = doc.getDocumentElement().getElementsByTagName("gpu");
        for (int i = 0; i < gpus.getLength(); i++) {
            Element g = (Element) gpus.item(i);
            if (g.getParentNode() != doc.getDocumentElement()) {
                continue;
            }
            Element fb = child(g, "fb_memory_usage");
            Element pci = child(g, "pci");
            Element migMode = child(g, "mig_mode");
            List<Long> pids = new ArrayList<>();
            Element procs = child(g, "processes");
            NodeList infos = procs == null ? null : procs.getElementsByTagName("process_info");
            for (int k = 0; infos != null && k < infos.getLength(); k++) {
                long pid = parseIntOr(text((Element) infos.item(k), "pid"), -1);
                if (pid >= 0 && !pids.contains(pid)) {
                    pids.add(pid); // a process on several MIG instances is listed once per instance
                }
            }
            pids.sort(null);
            out.add(new SmiGpu(text(g, "uuid"), text(g, "product_name"), mib(fb == null ? "" : text(fb, "total")),
                    parseIntOr(text(g, "minor_number"), -1), pci == null ? g.getAttribute("id") : text(pci, "pci_bus_id"),
                    migMode == null ? "N/A" : text(migMode, "current_mig"),
                    migMode == null ? "N/A" : text(migMode, "pending_mig"), List.copyOf(pids)));
        }
        return out;
    }

    private static Element child(Element parent, String name) {
        NodeList l = parent.getChildNodes();
        for (int i = 0; i < l.getLength(); i++) {
            if (l.item(i) instanceof Element e && e.getTagName().equals(name)) {
                return e;
            }
        }
        return null;
    }

    private static String text(Element parent, String name) {
        Element e = child(parent, name);
        return e == null ? "" : e.getTextContent().trim();
    }

    private static long mib(String s) {
        String digits = s.replace("MiB", "").trim();
        try {
            return Long.parseLong(digits);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    private static int parseIntOr(String s, int dflt) {
        try {
            return Integer.parseInt(s.trim());
        } catch (NumberFormatException e) {
            return dflt;
        }
    }

    /**
     * The "CPU Affinity" and "NUMA Affinity" cells of {@code nvidia-smi topo -m}, by GPU index. The output is
     * tab-separated; the two columns are found by their header names.
     */
    static Map<Integer, String[]> parseAffinity(String text) {
        int cpu = -1;
        int numa = -1;
        Map<Integer, String[]> out = new HashMap<>();
        for (String raw : text.split("\\R")) {
            String[] cells = raw.replaceAll("\u001B\\[[0-9;]*m", "").split("\t");
            if (cpu < 0) {
                for (int k = 0; k < cells.length; k++) {
                    if (cells[k].trim().equals("CPU Affinity")) {
                        cpu = k;
                    } else if (cells[k].trim().equals("NUMA Affinity")) {
                        numa = k;
                    }
                }
                continue;
            }
            String first = cells[0].trim();
            if (first.matches("GPU\\d+") && cells.length > Math.max(cpu, numa) && numa >= 0) {
                out.put(Integer.parseInt(first.substring(3)), new String[] {cells[cpu].trim(), cells[numa].trim()});
            }
        }
        return out;
    }

    /** The GPU-to-GPU cells of {@code nvidia-smi topo -m}, by GPU index. */
    static Map<Integer, Map<Integer, String>> parseTopo(String text) {
        List<Integer> columns = null;
        Map<Integer, Map<Integer, String>> out = new HashMap<>();
        for (String raw : text.split("\\R")) {
            String line = raw.replaceAll("\u001B\\[[0-9;]*m", ""); // colour codes
            String[] cells = line.trim().split("\\s+");
            if (cells.length == 0 || cells[0].isEmpty()) {
                continue;
            }
            if (columns == null && cells[0].startsWith("GPU") && !line.startsWith("GPU")) {
                columns = new ArrayList<>();
                for (String c : cells) {
                    if (!c.matches("GPU\\d+")) {
                        break;
                    }
                    columns.add(Integer.parseInt(c.substring(3)));
                }
                continue;
            }
            if (columns != null && cells[0].matches("GPU\\d+")) {
                int row = Integer.parseInt(cells[0].substring(3));
                Map<Integer, String> r = new HashMap<>();
                for (int k = 0; k < columns.size() && k + 1 < cells.length; k++) {
                    r.put(columns.get(k), cells[k + 1]);
                }
                out.put(row, r);
            }
        }
        if (columns == null) {
            throw new IllegalArgumentException("no GPU header line in the nvidia-smi topo -m output");
        }
        return out;
    }
}
