package io.qgpu.testkit.machines;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The tests run on the class path (see the POM); this checks what the module exports to module-path users. */
class ModuleDescriptorTest {

    @Test
    void theTestkitModuleExportsItsPackagesAndRequiresJUnitTransitively() throws Exception {
        Path classes = Path.of(Machines.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        ModuleDescriptor d;
        try (InputStream in = Files.newInputStream(classes.resolve("module-info.class"))) {
            d = ModuleDescriptor.read(in);
        }
        assertEquals("io.qgpu.testkit", d.name());
        assertEquals(Set.of("io.qgpu.testkit.machines", "io.qgpu.testkit.property", "io.qgpu.testkit.invariants",
                "io.qgpu.testkit.contract", "io.qgpu.testkit.sim", "io.qgpu.testkit.sim.scenario"), d.exports().stream().map(ModuleDescriptor.Exports::source).collect(Collectors.toSet()));
        Set<String> transitive = d.requires().stream()
                .filter(r -> r.modifiers().contains(ModuleDescriptor.Requires.Modifier.TRANSITIVE))
                .map(ModuleDescriptor.Requires::name).collect(Collectors.toSet());
        assertTrue(transitive.containsAll(Set.of("io.qgpu.api", "io.qgpu.core", "io.qgpu.json", "org.junit.jupiter.api")), transitive::toString);
        assertTrue(d.opens().stream().anyMatch(o -> o.source().equals("io.qgpu.testkit.contract")
                && o.targets().contains("org.junit.platform.commons")));
        assertTrue(d.opens().stream().anyMatch(o -> o.source().equals("io.qgpu.testkit.sim.scenario")
                && o.targets().contains("com.fasterxml.jackson.databind")), "Jackson binds the scenario records");
    }
}
