package io.qgpu.kubernetes.dra;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.qgpu.kubernetes.dra.v1.DRAPluginGrpc;
import io.qgpu.kubernetes.node.sharing.SharingOptions;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Issue 37's DRA cases: nothing a claim made on the node outlives it (directories, specs, reservations, saved
 * state), a failed start leaves nothing serving, stale claims are swept, and a state file of another boot is not
 * restored blindly.
 */
class ConvergenceTest extends DriverTestBase {
    Path cacheRoot;
    Path lockDir;

    DriverConfig hami() throws IOException {
        Path lib = Files.writeString(tmp.resolve("libvgpu.so"), "any file");
        cacheRoot = tmp.resolve("hami-cache");
        lockDir = tmp.resolve("vgpulock");
        return config("t4x4").withSharing(SharingOptions.parse(Map.of("--sharing", "hami-core", "--hami-core-library", lib.toString(),
                "--hami-core-cache-root", cacheRoot.toString(), "--hami-core-lock-dir", lockDir.toString())));
    }

    List<String> list(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    String prepare(DRAPluginGrpc.DRAPluginBlockingStub stub, String name, String uid) {
        return Kubelet.prepare(stub, Kubelet.claim(Claims.NS, name, uid)).getClaimsOrThrow(uid).getError();
    }

    String unprepare(DRAPluginGrpc.DRAPluginBlockingStub stub, String name, String uid) {
        return Kubelet.unprepare(stub, Kubelet.claim(Claims.NS, name, uid)).getClaimsOrThrow(uid).getError();
    }

    @Test
    void aHamiCoreCacheDirectoryGoesWithItsClaimAtUnprepareAndAtARolledBackPrepare() throws Exception {
        DraDriver d = DraDriver.start(hami(), client);
        open.add(d);
        DRAPluginGrpc.DRAPluginBlockingStub stub = kubelet.v1(register());
        String uid = Claims.allocated(client, "share", Claims.share("gpu-0", "4Gi", "40", null));
        assertEquals("", prepare(stub, "share", uid));
        assertEquals(List.of(uid), list(cacheRoot));
        assertEquals("", unprepare(stub, "share", uid));
        assertEquals(List.of(), list(cacheRoot), "no directory outlives its claim");

        // a prepare whose CDI spec cannot be written is rolled back: no directory, no reservation, nothing saved
        String state0 = Files.exists(state) ? Files.readString(state) : "";
        Path specs = cdi;
        Files.createDirectories(specs);
        Path blocker = specs.resolve("qgpu.io-gpu_" + "x" + ".json");
        String other = Claims.allocated(client, "other", Claims.share("gpu-0", "14Gi", "40", null));
        // a directory where the spec must go, not empty, so that no pass of the reconciler (whose timer runs) can remove it
        Files.createDirectories(specs.resolve("qgpu.io-gpu_" + other + ".json").resolve("x"));
        String error = prepare(stub, "other", other);
        assertFalse(error.isEmpty(), "the prepare fails");
        assertEquals(List.of(), list(cacheRoot), "the rolled-back prepare left no directory");
        assertTrue(d.claims().get(other).isEmpty());
        assertFalse(Files.exists(state) && Files.readString(state).contains(other), "nothing of it is saved");
        assertFalse(Files.exists(blocker));
        Files.delete(specs.resolve("qgpu.io-gpu_" + other + ".json").resolve("x"));
        Files.delete(specs.resolve("qgpu.io-gpu_" + other + ".json"));
        // and the whole GPU is still free for it (no reservation survived): 14 GiB of a T4's 15 fit
        assertEquals("", prepare(stub, "other", other), "a retry fits: the failed prepare kept no reservation");
        assertTrue(state0.isEmpty() || !state0.contains(other));
    }

    @Test
    void aDirectoryLeftByACrashIsRemovedAtStart() throws Exception {
        DriverConfig c = hami();
        Files.createDirectories(cacheRoot.resolve("claim-of-a-crash"));
        Files.writeString(cacheRoot.resolve("claim-of-a-crash/vgpu.cache"), "x");
        DraDriver d = DraDriver.start(c, client);
        open.add(d);
        assertEquals(List.of(), list(cacheRoot));
    }

    @Test
    void aFailedStartLeavesNothingServing() throws Exception {
        // the registration socket cannot be served: a directory stands where it must go
        Files.createDirectories(registrar.resolve(DriverNames.REGISTRATION_SOCKET).resolve("x"));
        DriverConfig c = config("t4x4");
        assertThrows(Exception.class, () -> DraDriver.start(c, client));
        assertFalse(Files.exists(c.draSocket()), "the DRA socket it had served is gone");
        assertEquals(0, FAKE.fake_nvml_init_count(), "the NVML session is closed");
        assertTrue(Thread.getAllStackTraces().keySet().stream().noneMatch(t -> t.getName().startsWith("qgpu-dra-driver")
                && t.isAlive() && !t.getName().contains("-accept") && !t.getName().contains("-io")), "no timer of the driver runs");
    }

    @Test
    void staleClaimsAreSweptByNameAndUid() throws Exception {
        DraDriver d = start("t4x4");
        DRAPluginGrpc.DRAPluginBlockingStub stub = kubelet.v1(register());
        String gone = Claims.allocated(client, "gone", Claims.share("gpu-0", "8Gi", "40", null));
        String renewed = Claims.allocated(client, "renewed", Claims.share("gpu-0", "7Gi", "40", null));
        String kept = Claims.allocated(client, "kept", Claims.share("gpu-1", "7Gi", "40", null));
        for (String[] c : new String[][] {{"gone", gone}, {"renewed", renewed}, {"kept", kept}}) {
            assertEquals("", prepare(stub, c[0], c[1]));
        }
        // the pod was force-deleted: its claim is gone; another was deleted and created again under its name
        client.resources(ResourceClaim.class).inNamespace(Claims.NS).withName("gone").delete();
        client.resources(ResourceClaim.class).inNamespace(Claims.NS).withName("renewed").delete();
        String newUid = Claims.allocated(client, "renewed", Claims.share("gpu-0", "7Gi", "40", null));
        assertFalse(newUid.equals(renewed));

        assertEquals(List.of(gone, renewed), d.sweep());
        assertEquals(List.of(kept), d.claims().all().stream().map(PreparedClaim::uid).toList());
        assertTrue(d.reconciler().reconcile().converged());
        assertEquals(List.of("qgpu.io-gpu_" + kept + ".json"), list(cdi));
        assertFalse(Files.readString(state).contains(gone));
        // gpu-0's 15 GiB are free again
        String big = Claims.allocated(client, "big", Claims.share("gpu-0", "15Gi", "40", null));
        assertEquals("", prepare(stub, "big", big));
        assertEquals(List.of(), d.sweep(), "live claims are never swept");
    }

    @Test
    void aStateFileOfAnotherBootIsNotRestored() throws Exception {
        DraDriver first = DraDriver.start(config("t4x4").withBootId(Optional.of("boot-1")), client);
        DRAPluginGrpc.DRAPluginBlockingStub stub = kubelet.v1(register());
        String uid = Claims.allocated(client, "c", Claims.share("gpu-0", "15Gi", "40", null));
        assertEquals("", prepare(stub, "c", uid));
        first.close();
        assertTrue(Files.readString(state).contains("\"bootId\" : \"boot-1\""));

        // the same boot: restored
        DraDriver same = DraDriver.start(config("t4x4").withBootId(Optional.of("boot-1")), client);
        assertEquals(1, same.claims().all().size());
        same.close();

        // after a reboot: the claim's container is gone; nothing restored, its spec removed, the GPU free
        DraDriver rebooted = DraDriver.start(config("t4x4").withBootId(Optional.of("boot-2")), client);
        open.add(rebooted);
        assertEquals(List.of(), rebooted.claims().all());
        assertEquals(List.of(), list(cdi));
        assertTrue(Files.readString(state).contains("\"bootId\" : \"boot-2\""));
        assertFalse(Files.readString(state).contains(uid));
        String again = Claims.allocated(client, "again", Claims.share("gpu-0", "15Gi", "40", null));
        assertEquals("", prepare(kubelet.v1(register()), "again", again));
    }
}
