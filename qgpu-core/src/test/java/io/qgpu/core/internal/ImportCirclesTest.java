package io.qgpu.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The ledger's import circles stay cut (issue 41 item 6): {@code Ledger} uses {@code LedgerFeeds} (it installs
 * the feed accessor) and {@code HealthMarking} (it marks health), and neither names {@code Ledger} back, by an
 * import or a qualified name in code (javadoc and string literals aside). Reads the sources, so it runs from
 * the module's directory, as Maven runs tests.
 */
class ImportCirclesTest {

    private static final Path SOURCES = Path.of("src/main/java");

    @Test
    void theLedgersHelpersDoNotNameTheLedger() throws IOException {
        List<String> found = new ArrayList<>();
        found.addAll(references("io.qgpu.core.internal.LedgerFeeds", "io.qgpu.core.ledger.Ledger"));
        found.addAll(references("io.qgpu.core.ledger.internal.HealthMarking", "io.qgpu.core.ledger.Ledger"));
        assertEquals(List.of(), found, "a circle with Ledger is back");
    }

    @Test
    void theLedgerStillUsesItsHelpers() throws IOException {   // the check above reads the right files
        assertEquals(1, references("io.qgpu.core.ledger.Ledger", "io.qgpu.core.internal.LedgerFeeds").size());
        assertEquals(1, references("io.qgpu.core.ledger.Ledger", "io.qgpu.core.ledger.internal.HealthMarking").size());
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
