package io.qgpu.kubernetes.node.mps;

import static io.qgpu.kubernetes.node.mps.MpsLimitsTest.exclusive;
import static io.qgpu.kubernetes.node.mps.MpsLimitsTest.shared;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Placement;
import io.qgpu.kubernetes.node.reconcile.NodeReconciler;
import io.qgpu.kubernetes.node.reconcile.NodeResource;
import io.qgpu.nvml.NvmlComputeMode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The MPS side of a node agent as reconciler resources: the shared-memory directory, the compute modes, the daemons
 * and their limits, in that order; sharing stops on a GPU an exclusive claim holds and starts again when it is gone.
 */
class MpsNodeTest {
    static final String A = "GPU-a";
    static final String B = "GPU-b";
    static final long GIB = 1L << 30;

    @TempDir
    Path tmp;

    final ManualTicker ticker = new ManualTicker();
    final MpsSupervisorTest.FakeControl control = new MpsSupervisorTest.FakeControl(ticker);
    final ComputeModesTest.Gpus gpus = new ComputeModesTest.Gpus();
    final List<Placement> placements = new ArrayList<>();

    MpsNode node(MpsDaemonMode mode) {
        MpsSupervisor s = new MpsSupervisor(control, mode, MpsSupervisor.Settings.defaults(), ticker);
        MpsLayout layout = new MpsLayout(tmp.resolve("mps"));
        return new MpsNode(s, gpus, layout, layout.defaultShmDir(), () -> MpsNode.sharedGpus(List.of(A, B), List.copyOf(placements)),
                gpu -> MpsLimits.forGpu(gpu, List.copyOf(placements), new MpsLimits(1024, 5)));
    }

    @Test
    void theSharedGpusAreTheNodesLessThoseOfExclusiveClaims() {
        assertEquals(Set.of(A, B), MpsNode.sharedGpus(List.of(A, B), List.of(shared("t1", GIB, 50, A))));
        assertEquals(Set.of(A), MpsNode.sharedGpus(List.of(A, B), List.of(shared("t1", GIB, 50, A), exclusive("t2", B))));
        assertEquals(List.of(A), MpsNode.sharedGpusOf(shared("t1", GIB, 50, A)));
        assertEquals(List.of(), MpsNode.sharedGpusOf(exclusive("t2", B)));
    }

    @Test
    void aPassSharesEveryGpuWithItsModeDaemonAndLimitsAndAnExclusiveClaimStopsSharingItsGpu() throws Exception {
        MpsNode node = node(MpsDaemonMode.AGENT);
        assertEquals(List.of(MpsNode.SHM_KIND, ComputeModes.KIND, MpsDaemons.KIND, MpsServerLimits.KIND),
                node.resources().stream().map(NodeResource::kind).toList());
        NodeReconciler r = new NodeReconciler("test", node.resources(), NodeReconciler.Settings.defaults(), ticker);
        assertTrue(r.reconcile().converged(), r.failures().toString());
        Path shm = tmp.resolve("mps/shm");
        assertTrue(Files.isDirectory(shm));
        assertEquals("rwxrwxrwt", rwx(shm), "as /dev/shm");
        assertEquals(NvmlComputeMode.EXCLUSIVE_PROCESS, gpus.modes.get(A));
        assertEquals(NvmlComputeMode.EXCLUSIVE_PROCESS, gpus.modes.get(B));
        assertEquals(List.of("start " + A, "start " + B), control.calls);
        assertTrue(control.commands.contains(A + ": set_default_device_pinned_mem_limit 0 1024M"), "no slice yet: the floor");

        placements.add(shared("t1", 8 * GIB, 70, A));
        assertTrue(r.reconcile().converged());
        assertTrue(control.commands.contains(A + ": set_default_device_pinned_mem_limit 0 8192M"), control.commands.toString());
        assertTrue(control.commands.contains(A + ": set_default_active_thread_percentage 70"));

        // an exclusive claim on B, through the synchronous steps (as the DRA driver's prepare runs them)
        placements.add(exclusive("t2", B));
        assertTrue(node.removeNow(r, List.of(B)));
        assertEquals(List.of("start " + A, "start " + B, "quit " + B), control.calls, "sharing stops on B: its daemon quits");
        assertEquals(NvmlComputeMode.PROHIBITED, gpus.modes.get(B), "and B gets its mode back");
        assertTrue(r.reconcile().converged());
        assertEquals(3, control.calls.size(), "a pass keeps it so");

        placements.remove(1);   // released
        node.ensureNow(r, List.of(B));
        assertEquals("start " + B, control.calls.get(3));
        assertEquals(NvmlComputeMode.EXCLUSIVE_PROCESS, gpus.modes.get(B));
        assertEquals(Set.of(A, B), node.supervisor().limited());
    }

    @Test
    void inExternalModeAGpuWithoutItsDaemonFailsItsStepUntilThePodStartsIt() throws Exception {
        MpsNode node = node(MpsDaemonMode.EXTERNAL);
        NodeReconciler r = new NodeReconciler("test", node.resources(), NodeReconciler.Settings.defaults(), ticker);
        NodeReconciler.Report first = r.reconcile();
        assertFalse(first.converged());
        NodeReconciler.Failure f = first.failures().stream().filter(x -> x.kind().equals(MpsDaemons.KIND)).findFirst().orElseThrow();
        assertTrue(f.error().contains("no MPS control daemon answers for GPU " + A) && f.error().contains("--mps-daemons agent"), f.error());
        assertEquals(List.of(), control.calls, "nothing started");

        control.alive.addAll(List.of(A, B));   // the DaemonSet's pod starts them
        ticker.advance(Duration.ofMinutes(1));
        assertTrue(r.reconcile().converged(), r.failures().toString());
        assertEquals(List.of(), control.calls, "adopted: no start, no quit");
        assertEquals(Set.of(A, B), node.supervisor().limited());

        placements.add(exclusive("t2", B));
        assertTrue(node.removeNow(r, List.of(B)));
        assertEquals(List.of(), control.calls, "external: B's daemon is left to its pod");
        assertTrue(control.alive.contains(B));
        assertEquals(NvmlComputeMode.PROHIBITED, gpus.modes.get(B));
    }

    private static String rwx(Path p) throws Exception {
        int mode = (Integer) Files.getAttribute(p, "unix:mode");
        String s = java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(p));
        return (mode & 01000) != 0 ? s.substring(0, 8) + (s.charAt(8) == 'x' ? 't' : 'T') : s;
    }
}
