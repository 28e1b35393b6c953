package io.qgpu.core.placement;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The placement engine reaches the ledger through its exported facade only ({@code Ledger},
 * {@code AdmissionRules}, the result types), never through {@code io.qgpu.core.ledger.internal}.
 * Checked on the compiled classes of the package: a class that names a type of the internal package
 * (an import, a call, a field, even a fully qualified name) carries its binary name in its constant
 * pool; the sources are checked too, for Javadoc links. Shown to catch a reference: run against
 * the package before it moved to the facade (with {@code PreemptionPlanner} already moved), the
 * class check listed {@code NodeVerdicts.class, Refusals.class} and the source check
 * {@code NodeVerdicts.java, PlacementEngine.java, Refusals.java} (the last only for the Javadoc
 * links the published Javadoc could not show).
 */
class PlacementUsesLedgerFacadeTest {

    private static final String INTERNAL = "io/qgpu/core/ledger/internal/";

    private static Path classesOfThisPackage() throws URISyntaxException {
        return Path.of(PlacementEngine.class.getProtectionDomain().getCodeSource().getLocation().toURI())
                .resolve("io/qgpu/core/placement");
    }

    private static boolean mentions(Path file, String what) {
        try (InputStream in = Files.newInputStream(file)) {
            return new String(in.readAllBytes(), StandardCharsets.ISO_8859_1).contains(what);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @Test
    void noPlacementClassNamesATypeOfTheLedgersInternalPackage() throws Exception {
        List<String> offenders;
        List<Path> classes;
        try (Stream<Path> files = Files.list(classesOfThisPackage())) {
            classes = files.filter(f -> f.toString().endsWith(".class")).toList();
        }
        offenders = classes.stream().filter(f -> mentions(f, INTERNAL)).map(f -> f.getFileName().toString()).sorted().toList();
        assertTrue(classes.size() > 20, "compiled placement classes found: " + classes.size());
        assertEquals(List.of(), offenders);
    }

    @Test
    void noPlacementSourceNamesTheLedgersInternalPackage() throws IOException {
        Path sources = Path.of("src/main/java/io/qgpu/core/placement");
        assertTrue(Files.isDirectory(sources), sources.toAbsolutePath().toString());
        List<String> offenders;
        try (Stream<Path> files = Files.list(sources)) {
            offenders = files.filter(f -> mentions(f, "io.qgpu.core.ledger.internal") || mentions(f, "{@link Admission#")
                    || mentions(f, "{@link HostAdmission")).map(f -> f.getFileName().toString()).sorted().toList();
        }
        assertEquals(List.of(), offenders);
    }
}
