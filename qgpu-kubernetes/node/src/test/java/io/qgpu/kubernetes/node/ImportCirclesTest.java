package io.qgpu.kubernetes.node;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The node module's import circle stays cut (issue 41 item 6): {@code PlacementEdits} merges a sharing back end's
 * {@code SharingEdits} in, and {@code SharingEdits} does not name {@code PlacementEdits} back, by an import or a
 * qualified name in code (javadoc and string literals aside). Reads the sources, so it runs from the module's
 * directory, as Maven runs tests.
 */
class ImportCirclesTest {

    private static final Path SOURCES = Path.of("src/main/java");

    @Test
    void sharingEditsDoesNotNamePlacementEdits() throws IOException {
        assertEquals(List.of(), references("io.qgpu.kubernetes.node.sharing.SharingEdits", "io.qgpu.kubernetes.node.PlacementEdits"),
                "the circle PlacementEdits <-> SharingEdits is back");
    }

    @Test
    void placementEditsStillUsesSharingEdits() throws IOException {   // the check above reads the right files
        assertEquals(1, references("io.qgpu.kubernetes.node.PlacementEdits", "io.qgpu.kubernetes.node.sharing.SharingEdits").size());
    }

    /**
     * Where the source of {@code from} names {@code to} (of another package): an import of it or of its package,
     * or its qualified name in code. Comments and string literals are left out.
     */
    static List<String> references(String from, String to) throws IOException {
        Path file = SOURCES.resolve(from.replace('.', '/') + ".java");
        String code = stripCommentsAndStrings(Files.readString(file));
        String pkg = to.substring(0, to.lastIndexOf('.'));
        List<String> out = new ArrayList<>();
        Pattern imports = Pattern.compile("(?m)^\\s*import\\s+(static\\s+)?(" + Pattern.quote(to) + "(\\.[\\w.*]+)?|"
                + Pattern.quote(pkg) + "\\.\\*)\\s*;");
        imports.matcher(code).results().forEach(m -> out.add(from + " imports " + m.group(2)));
        String withoutImports = code.replaceAll("(?m)^\\s*import\\s+[^;]+;", "");
        Pattern qualified = Pattern.compile(Pattern.quote(to) + "(?![\\w$])");
        qualified.matcher(withoutImports).results().forEach(m -> out.add(from + " names " + to));
        return out;
    }

    private static String stripCommentsAndStrings(String s) {
        return s.replaceAll("(?s)/\\*.*?\\*/", " ")
                .replaceAll("(?m)//.*$", " ")
                .replaceAll("\"(?:\\\\.|[^\"\\\\])*\"", "\"\"");
    }
}
