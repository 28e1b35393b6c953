package io.qgpu.core.publicapi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The exported API of qgpu-core names no type of a package the module does not export: no public or
 * protected member of a public type in an exported package takes, returns or is of such a type,
 * and no such type is a public supertype. A type a user cannot see (or that a later release may
 * change freely) must not appear in what the user calls. The exported packages are read from
 * {@code module-info.java}, so a package exported later is checked without editing this test.
 *
 * <p>Shown to catch a leak: with {@code public NodeFeed feed()} put back on {@code Ledger} (the feed
 * now in the non-exported {@code io.qgpu.core.internal}), it failed with
 * {@code io.qgpu.core.ledger.Ledger.feed() returns io.qgpu.core.internal.NodeFeed}.
 */
class ExportedApiLeakTest {

    @Test
    void noPublicMemberOfAnExportedTypeNamesATypeOfAPackageThatIsNotExported() throws Exception {
        Set<String> exported = ExportedApi.exportedPackages();
        assertTrue(exported.contains("io.qgpu.core.ledger"), "exports read: " + exported);
        List<String> leaks = new ArrayList<>();
        int checked = 0;
        for (Class<?> c : ExportedApi.visibleTypes(exported)) {
            checked++;
            ExportedApi.signatureTypes(c, (at, k) -> {
                String pkg = k.getPackageName();
                if (pkg.startsWith("io.qgpu.core") && !exported.contains(pkg)) {
                    leaks.add(at + " " + k.getName());
                }
            });
        }
        assertTrue(checked > 50, "exported types checked: " + checked);
        assertEquals(List.of(), leaks);
    }
}
