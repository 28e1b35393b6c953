package io.qgpu.kubernetes.node.reconcile;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class OwnedDirectoriesTest {
    @TempDir
    Path tmp;

    @Test
    void removesWhatNoOwnerWantsWithoutFollowingLinks() throws Exception {
        Path root = tmp.resolve("root");
        Path outside = Files.createDirectories(tmp.resolve("outside"));
        Files.writeString(outside.resolve("keep"), "x");
        Set<Path> want = new HashSet<>();
        OwnedDirectories d = new OwnedDirectories("cache", root, () -> want);
        assertEquals(Set.of(), d.present(), "no root yet: nothing present");
        want.add(root.resolve("a"));
        d.ensure(root.resolve("a"));
        Files.writeString(root.resolve("a/vgpu.cache"), "x");
        Files.createDirectories(root.resolve("stale/sub"));
        Files.writeString(root.resolve("stale/sub/f"), "x");
        Files.createSymbolicLink(root.resolve("link"), outside);
        NodeReconciler r = new NodeReconciler("t", java.util.List.of(d), NodeReconcilerTest.SETTINGS, () -> 0L);
        assertTrue(r.reconcile().converged());
        assertTrue(Files.exists(root.resolve("a/vgpu.cache")), "ensure never empties a directory in use");
        assertFalse(Files.exists(root.resolve("stale")));
        assertFalse(Files.exists(root.resolve("link"), java.nio.file.LinkOption.NOFOLLOW_LINKS));
        assertTrue(Files.exists(outside.resolve("keep")), "a link is removed, never followed");
    }

    @Test
    void refusesPathsOutsideItsRoot() {
        OwnedDirectories d = new OwnedDirectories("cache", tmp, Set::of);
        assertThrows(IllegalArgumentException.class, () -> d.remove(tmp.resolve("a/b")));
        assertThrows(IllegalArgumentException.class, () -> d.remove(tmp.resolve("../x")));
    }
}
