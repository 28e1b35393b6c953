package io.qgpu.kubernetes.node.sharing;

import static io.qgpu.kubernetes.node.sharing.Placements.GPU_A;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.PriorityClass;
import io.qgpu.kubernetes.node.mps.MpsLayout;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NodeSharingTest {
    private final MpsSharing mps = MpsSharing.of(new MpsLayout(Path.of("/run/qgpu/mps")));
    private final io.qgpu.api.Placement shared = Placements.shared(2L << 30, 10, 40, PriorityClass.ONLINE, GPU_A);

    @Test
    void noneLeavesEveryContainerAsToday() {
        NodeSharing s = NodeSharing.open(SharingBackend.NONE, null, null);
        assertEquals(SharingBackend.NONE, s.backend());
        assertEquals(SharingEdits.none(), s.edits(shared, "k"));
    }

    @Test
    void mpsAndHamiCoreDelegate(@TempDir Path dir) throws IOException {
        assertEquals(mps.edits(shared), NodeSharing.open(SharingBackend.MPS, mps, null).edits(shared, "k"));

        Path lib = Files.writeString(dir.resolve("libvgpu.so"), "elf");
        HamiCoreSharing hami = HamiCoreSharing.of(lib, dir.resolve("cache"));
        NodeSharing s = NodeSharing.open(SharingBackend.HAMI_CORE, null, hami);
        assertEquals(hami.edits(shared, "k"), s.edits(shared, "k"));
        assertEquals(SharingBackend.HAMI_CORE, s.edits(shared, "k").backend());
    }

    @Test
    void hamiCoreWithoutItsLibraryDoesNotOpen(@TempDir Path dir) {
        HamiCoreSharing hami = HamiCoreSharing.of(dir.resolve("missing/libvgpu.so"), dir.resolve("cache"));
        InvalidValueException e = assertThrows(InvalidValueException.class, () -> NodeSharing.open(SharingBackend.HAMI_CORE, mps, hami));
        assertEquals("--hami-core-library", e.field());
    }

    @Test
    void theChosenBackendNeedsItsSettings() {
        assertThrows(NullPointerException.class, () -> NodeSharing.open(SharingBackend.MPS, null, null));
        assertThrows(NullPointerException.class, () -> NodeSharing.open(SharingBackend.HAMI_CORE, mps, null));
    }
}
