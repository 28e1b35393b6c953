package io.qgpu.kubernetes.node.mps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.kubernetes.node.reconcile.NodeReconciler;
import io.qgpu.nvml.NvmlComputeMode;
import io.qgpu.nvml.NvmlException;
import io.qgpu.nvml.NvmlReturn;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 38: the GPUs under MPS go to {@code EXCLUSIVE_PROCESS} through the agent's reconciler, their previous mode
 * is kept on the node and set again when sharing stops on them, and a refused change is reported and retried.
 * GPUs in memory here; through the fake NVML in the agents' {@code SharingTest}s.
 */
class ComputeModesTest {
    static final String A = "GPU-a";
    static final String B = "GPU-b";
    static final NodeReconciler.Settings SETTINGS = new NodeReconciler.Settings(Duration.ofSeconds(10), Duration.ofSeconds(1),
            Duration.ofSeconds(8));

    @TempDir
    Path tmp;

    /** Two GPUs in memory; {@link #refuse} calls of the setter fail with NO_PERMISSION. */
    static final class Gpus implements ComputeModes.Gpus {
        final Map<String, NvmlComputeMode> modes = new TreeMap<>(Map.of(A, NvmlComputeMode.DEFAULT, B, NvmlComputeMode.PROHIBITED));
        final List<String> sets = new ArrayList<>();
        int refuse;

        @Override
        public NvmlComputeMode mode(String gpu) {
            return modes.get(gpu);
        }

        @Override
        public void setMode(String gpu, NvmlComputeMode mode) {
            if (refuse > 0) {
                refuse--;
                throw new NvmlException("nvmlDeviceSetComputeMode", NvmlReturn.NO_PERMISSION.code(), gpu);
            }
            sets.add(gpu + " " + mode);
            modes.put(gpu, mode);
        }
    }

    final Gpus gpus = new Gpus();
    final Set<String> shared = new LinkedHashSet<>(List.of(A, B));
    final ManualTicker ticker = new ManualTicker();

    @Test
    void sharedGpusGoToExclusiveProcessAndGetTheirModeBackWhenSharingStops() throws Exception {
        MpsLayout layout = new MpsLayout(tmp.resolve("mps"));
        ComputeModes modes = new ComputeModes(gpus, layout, () -> Set.copyOf(shared));
        NodeReconciler r = new NodeReconciler("test", List.of(modes), SETTINGS, ticker);
        assertTrue(r.reconcile().converged());
        assertEquals(Map.of(A, NvmlComputeMode.EXCLUSIVE_PROCESS, B, NvmlComputeMode.EXCLUSIVE_PROCESS), gpus.modes);
        assertEquals("DEFAULT", Files.readString(layout.gpuDir(A).resolve(ComputeModes.PREVIOUS_FILE)));
        assertEquals("PROHIBITED", Files.readString(layout.gpuDir(B).resolve(ComputeModes.PREVIOUS_FILE)));
        assertEquals(Set.of(A, B), modes.present());

        assertTrue(r.reconcile().converged());
        assertEquals(2, gpus.sets.size(), "a pass that finds the modes set sets nothing");

        // an agent restarted later keeps the mode it found before MPS, not EXCLUSIVE_PROCESS
        ComputeModes again = new ComputeModes(gpus, layout, () -> Set.copyOf(shared));
        again.ensure(A);
        assertEquals("DEFAULT", Files.readString(layout.gpuDir(A).resolve(ComputeModes.PREVIOUS_FILE)));

        shared.remove(B);   // an exclusive claim takes GPU B
        NodeReconciler.Report after = r.reconcile();
        assertTrue(after.converged());
        assertEquals(1, after.removed());
        assertEquals(NvmlComputeMode.PROHIBITED, gpus.modes.get(B), "the mode it had before MPS");
        assertFalse(Files.exists(layout.gpuDir(B).resolve(ComputeModes.PREVIOUS_FILE)));
        assertEquals(NvmlComputeMode.EXCLUSIVE_PROCESS, gpus.modes.get(A));

        modes.remove(B);   // nothing remembered: a no-op, whatever the mode is now
        assertEquals(NvmlComputeMode.PROHIBITED, gpus.modes.get(B));
    }

    @Test
    void aRefusedChangeIsReportedAndRetriedUntilItHolds() {
        MpsLayout layout = new MpsLayout(tmp.resolve("mps"));
        ComputeModes modes = new ComputeModes(gpus, layout, () -> Set.copyOf(shared));
        NodeReconciler r = new NodeReconciler("test", List.of(modes), SETTINGS, ticker);
        gpus.refuse = 2;
        NodeReconciler.Report first = r.reconcile();
        assertEquals(2, first.failures().size(), first.failures().toString());
        NodeReconciler.Failure f = first.failures().get(0);
        assertEquals(ComputeModes.KIND, f.kind());
        assertEquals(A, f.key());
        assertEquals("ensure", f.step());
        assertTrue(f.error().contains("NVML_ERROR_NO_PERMISSION") && f.error().contains("nvmlDeviceSetComputeMode"), f.error());
        assertEquals(NvmlComputeMode.DEFAULT, gpus.modes.get(A));

        assertFalse(r.reconcile().converged(), "not retried before the back-off is over");
        assertEquals(List.of(), gpus.sets);
        ticker.advance(Duration.ofSeconds(1));
        NodeReconciler.Report retried = r.reconcile();
        assertTrue(retried.converged(), retried.failures().toString());
        assertEquals(Map.of(A, NvmlComputeMode.EXCLUSIVE_PROCESS, B, NvmlComputeMode.EXCLUSIVE_PROCESS), gpus.modes);
        assertEquals("DEFAULT", assertDoesNotThrow(() -> Files.readString(layout.gpuDir(A).resolve(ComputeModes.PREVIOUS_FILE))),
                "the mode before the first attempt");
    }

    private static <T> T assertDoesNotThrow(java.util.concurrent.Callable<T> c) {
        try {
            return c.call();
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }
}
