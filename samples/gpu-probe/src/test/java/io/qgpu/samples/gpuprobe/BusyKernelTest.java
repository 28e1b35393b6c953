package io.qgpu.samples.gpuprobe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The busy kernel's PTX is well-formed as far as a text check can tell without a PTX assembler: the
 * module header ({@code .version}, {@code .target}, {@code .address_size}) before one
 * {@code .visible .entry}, a parameter list equal to {@link BusyKernel#PARAMS} and to the launch
 * arguments, balanced braces, declared registers only, branch targets that exist, statements ended by
 * semicolons.
 */
class BusyKernelTest {

    private static final Pattern ENTRY = Pattern.compile("\\.visible\\s+\\.entry\\s+(\\w+)\\s*\\(([^)]*)\\)", Pattern.DOTALL);

    @ParameterizedTest
    @CsvSource({"90, sm_75, 6.3", "75, sm_75, 6.3", "80, sm_75, 6.3", "120, sm_75, 6.3", "70, sm_70, 6.0", "72, sm_70, 6.0",
                "61, sm_52, 6.0", "52, sm_52, 6.0"})
    void headerNamesTargetAndIsaBeforeTheEntry(int cc, String target, String version) {
        List<String> lines = code(BusyKernel.ptx(cc));
        assertEquals(".version " + version, lines.get(0));
        assertEquals(".target " + target, lines.get(1));
        assertEquals(".address_size 64", lines.get(2));
        assertTrue(lines.get(3).startsWith(".visible .entry " + BusyKernel.ENTRY + "("), lines.get(3));
    }

    @Test
    void entryParametersMatchParamsAndTheLaunchArguments() {
        String ptx = BusyKernel.ptx(90);
        Matcher m = ENTRY.matcher(ptx);
        assertTrue(m.find(), "an entry");
        assertEquals(BusyKernel.ENTRY, m.group(1));
        List<BusyKernel.Param> declared = new ArrayList<>();
        for (String p : m.group(2).split(",")) {
            String[] parts = p.trim().split("\\s+");
            assertEquals(3, parts.length, "'.param <type> <name>': " + p);
            assertEquals(".param", parts[0]);
            declared.add(new BusyKernel.Param(parts[2], parts[1]));
        }
        assertEquals(BusyKernel.PARAMS, declared);
        assertTrue(!m.find(), "one entry only");

        List<Object> args = BusyKernel.arguments(0x7f00_0000_0000L, 123);
        assertEquals(declared.size(), args.size());
        for (int i = 0; i < args.size(); i++) {
            Class<?> expected = switch (declared.get(i).ptxType()) {
                case ".u64" -> Long.class;
                case ".u32" -> Integer.class;
                default -> throw new AssertionError("a parameter type the launch cannot pass: " + declared.get(i));
            };
            assertEquals(expected, args.get(i).getClass(), "argument " + i);
        }
        // every parameter is loaded, and by the type it is declared with
        for (BusyKernel.Param p : BusyKernel.PARAMS) {
            assertTrue(ptx.contains("ld.param" + p.ptxType() + " ") && ptx.contains("[" + p.name() + "]"),
                    "ld.param" + p.ptxType() + " of " + p.name());
        }
    }

    @Test
    void bodyIsBalancedUsesDeclaredRegistersAndExistingLabels() {
        String ptx = BusyKernel.ptx(90);
        int depth = 0;
        for (char c : ptx.toCharArray()) {
            depth += c == '{' ? 1 : c == '}' ? -1 : 0;
            assertTrue(depth >= 0, "no } before its {");
        }
        assertEquals(0, depth, "braces balance");

        Map<String, Integer> declared = new HashMap<>();
        Matcher reg = Pattern.compile("\\.reg\\s+\\.\\w+\\s+%(\\w+?)<(\\d+)>;").matcher(ptx);
        while (reg.find()) {
            declared.put(reg.group(1), Integer.parseInt(reg.group(2)));
        }
        assertEquals(Set.of("p", "r", "f", "rd"), declared.keySet());
        Matcher use = Pattern.compile("%(p|rd|r|f)(\\d+)\\b").matcher(ptx.replaceAll("\\.reg[^;]*;", ""));
        int uses = 0;
        while (use.find()) {
            uses++;
            int n = Integer.parseInt(use.group(2));
            assertTrue(n < declared.get(use.group(1)), "%" + use.group(1) + n + " is declared (" + declared + ")");
        }
        assertTrue(uses > 10, "the body uses registers");

        Set<String> labels = new HashSet<>();
        for (String line : code(ptx)) {
            if (line.matches("\\w+:")) {
                assertTrue(labels.add(line.substring(0, line.length() - 1)), "label defined once: " + line);
            }
        }
        Matcher bra = Pattern.compile("\\bbra(?:\\.uni)?\\s+(\\w+);").matcher(ptx);
        int branches = 0;
        while (bra.find()) {
            branches++;
            assertTrue(labels.contains(bra.group(1)), "branch target " + bra.group(1) + " is defined");
        }
        assertEquals(2, branches, "the loop's exit and back edge");
    }

    @Test
    void everyStatementEndsWithASemicolonAndTheTextIsAscii() {
        String ptx = BusyKernel.ptx(80);
        assertEquals(ptx, new String(ptx.getBytes(StandardCharsets.US_ASCII), StandardCharsets.US_ASCII));
        boolean inBody = false;
        for (String line : code(ptx)) {
            if (line.equals("{")) {
                inBody = true;
                continue;
            }
            if (line.equals("}")) {
                inBody = false;
                continue;
            }
            if (inBody && !line.matches("\\w+:")) {
                assertTrue(line.endsWith(";"), "statement ends with ';': " + line);
            }
        }
        assertTrue(ptx.contains("fma.rn.f32 %f1, %f1, " + BusyKernel.MULTIPLIER + ", 0f3F800000;"), "the FMA chain");
        assertTrue(ptx.contains("st.global.f32 [%rd4], %f1;"), "the result is stored, so the loop is not dead code");
        assertTrue(ptx.contains("ret;"));
    }

    @Test
    void refusesAComputeCapabilityOutsideTheRange() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> BusyKernel.ptx(35));
        assertTrue(e.getMessage().contains("35"), e.getMessage());
    }

    /** Lines without comments and blank lines, trimmed. */
    private static List<String> code(String ptx) {
        List<String> out = new ArrayList<>();
        for (String line : ptx.split("\n")) {
            String t = line.replaceAll("//.*", "").trim();
            if (!t.isEmpty()) {
                out.add(t);
            }
        }
        return out;
    }
}
