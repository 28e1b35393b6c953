package io.qgpu.core.publicapi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * qgpu-core is the engine and has no JSON library in it: its module descriptor requires no Jackson module,
 * no public signature of an exported package names a {@code com.fasterxml} type (Jackson is not part of the
 * core's API), and no compiled class of the module refers to one at all. The JSON formats live in qgpu-json
 * ({@code io.qgpu.json}), which reads and writes the core's types.
 *
 * <p>Shown to fail on the layout before qgpu-json (the JSON package {@code io.qgpu.core.json} inside
 * qgpu-core, {@code requires transitive com.fasterxml.jackson.databind}): the descriptor check named
 * {@code com.fasterxml.jackson.databind}, the signature check {@code io.qgpu.core.json.QgpuJson.mapper() returns
 * com.fasterxml.jackson.databind.ObjectMapper} and {@code JsonInput.root()}, {@code at()}, {@code bind()},
 * {@code problem()} likewise, and the class-file check every class of {@code io.qgpu.core.json} that uses
 * Jackson.
 */
class NoJacksonTest {

    private static final String JACKSON = "com.fasterxml";

    @Test
    void theModuleDescriptorRequiresNoJacksonModule() throws Exception {
        ModuleDescriptor d;
        try (InputStream in = Files.newInputStream(ExportedApi.classes().resolve("module-info.class"))) {
            d = ModuleDescriptor.read(in);
        }
        assertEquals("io.qgpu.core", d.name());
        List<String> jackson = d.requires().stream().map(ModuleDescriptor.Requires::name)
                .filter(n -> n.startsWith(JACKSON)).sorted().toList();
        assertEquals(List.of(), jackson, "qgpu-core requires");
        assertTrue(d.requires().stream().anyMatch(r -> r.name().equals("io.qgpu.api")), "requires read: " + d.requires());
    }

    @Test
    void noPublicSignatureOfAnExportedPackageNamesAJacksonType() throws Exception {
        Set<String> exported = ExportedApi.exportedPackages();
        assertTrue(exported.contains("io.qgpu.core.ledger"), "exports read: " + exported);
        List<String> found = new ArrayList<>();
        int[] named = {0};
        for (Class<?> c : ExportedApi.visibleTypes(exported)) {
            ExportedApi.signatureTypes(c, (at, k) -> {
                named[0]++;
                if (k.getName().startsWith(JACKSON + ".")) {
                    found.add(at + " " + k.getName());
                }
            });
        }
        assertTrue(named[0] > 500, "types named in signatures: " + named[0]);
        assertEquals(List.of(), found);
    }

    @Test
    void noClassOfTheModuleRefersToJackson() throws Exception {
        Path classes = ExportedApi.classes();
        List<String> found = new ArrayList<>();
        int read = 0;
        byte[] needle = (JACKSON.replace('.', '/') + "/").getBytes(StandardCharsets.US_ASCII);
        try (Stream<Path> s = Files.walk(classes)) {
            for (Path f : s.filter(p -> p.toString().endsWith(".class")).sorted().toList()) {
                read++;
                if (contains(Files.readAllBytes(f), needle)) {
                    found.add(classes.relativize(f).toString());
                }
            }
        }
        assertTrue(read > 100, "class files read: " + read);
        assertEquals(List.of(), found, "classes that name a " + JACKSON + " type");
    }

    private static boolean contains(byte[] hay, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= hay.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (hay[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return true;
        }
        return false;
    }
}
