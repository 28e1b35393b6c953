package io.qgpu.kubernetes.dra;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.common.util.concurrent.ListenableFuture;
import io.qgpu.kubernetes.dra.pluginregistration.PluginInfo;
import io.qgpu.kubernetes.dra.v1.DRAPluginGrpc;
import io.qgpu.kubernetes.dra.v1.NodePrepareResourceResponse;
import io.qgpu.kubernetes.dra.v1.NodePrepareResourcesRequest;
import io.qgpu.kubernetes.dra.v1.NodePrepareResourcesResponse;
import io.qgpu.kubernetes.node.dra.DraNames;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Item 5: the state is written before the answer, so a driver killed between the two and started again
 * on the same
 * {@code --state-file} re-registers, keeps the CDI spec, answers the re-prepare as the first would have,
 * and still refuses what that reservation leaves no room for.
 *
 * <p>The kill is simulated in this JVM: the thread that saved the state is frozen before it can answer,
 * then the driver's process resources are released as the kernel would release them (its NVML session,
 * its listening sockets; the fake NVML library is one per process, so a second live session would share
 * its state) and its socket files are put back as a killed process leaves them.
 */
class DurabilityTest extends DriverTestBase {
    static final long GIB = 1L << 30;

    /** A claim store that, once it has saved, freezes the saving thread: the process "dies" before answering. */
    static final class FreezeAfterSave implements ClaimStore {
        final ClaimStore real;
        final CountDownLatch saved = new CountDownLatch(1);
        final CountDownLatch thaw = new CountDownLatch(1);

        FreezeAfterSave(ClaimStore real) {
            this.real = real;
        }

        @Override
        public void save(List<PreparedClaim> claims) {
            real.save(claims);
            saved.countDown();
            try {
                thaw.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        @Override
        public Optional<ClaimStore.Saved> load() {
            return real.load();
        }
    }

    @Test
    void killedBetweenSavingAndAnsweringTheRestartedDriverAnswersAsBeforeAndKeepsTheReservation() throws Exception {
        FreezeAfterSave[] store = new FreezeAfterSave[1];
        DraDriver killed = DraDriver.start(config("dgx-h100"), client, real -> store[0] = new FreezeAfterSave(real));
        open.add(killed);
        open.add(() -> store[0].thaw.countDown()); // closed first: lets the frozen thread end before the driver closes
        PluginInfo info = register();
        String uid = Claims.allocated(client, "c1", Claims.share("gpu-0", "40Gi", "40", "aaaaaaaa-0000-0000-0000-00000000000a"));
        ListenableFuture<NodePrepareResourcesResponse> answer = DRAPluginGrpc.newFutureStub(kubelet.dial(Path.of(info.getEndpoint())))
                .nodePrepareResources(NodePrepareResourcesRequest.newBuilder().addClaims(Kubelet.claim(Claims.NS, "c1", uid)).build());
        assertTrue(store[0].saved.await(Kubelet.DEADLINE_SECONDS, TimeUnit.SECONDS), "the state was saved");
        assertFalse(answer.isDone(), "and no answer was sent");
        Path spec = cdi.resolve("qgpu.io-gpu_" + uid + ".json");
        assertFalse(Files.exists(spec), "the side effects come after the save: no spec yet");
        // kill -9: nothing of the driver runs on, its resources go, its socket files stay behind
        killed.close();
        Files.writeString(registrar.resolve(DriverNames.REGISTRATION_SOCKET), "socket of the killed driver");
        Files.writeString(plugins.resolve(DraNames.DRIVER).resolve(DriverNames.DRA_SOCKET), "socket of the killed driver");
        assertFalse(answer.isDone() && !answer.isCancelled() && answerOf(answer) != null, "the killed driver never answered");

        DraDriver again = start("dgx-h100");
        assertEquals(List.of(uid), again.claims().all().stream().map(PreparedClaim::uid).toList());
        String written = Files.readString(spec);   // written back by the restarted driver's first pass, before it serves
        assertTrue(written.contains(uid + "-gpu-0"), written);
        PluginInfo info2 = register();
        DRAPluginGrpc.DRAPluginBlockingStub stub = kubelet.v1(info2);
        NodePrepareResourceResponse r = Kubelet.prepare(stub, Kubelet.claim(Claims.NS, "c1", uid)).getClaimsOrThrow(uid);
        assertEquals("", r.getError());
        assertEquals(List.of("qgpu.io/gpu=" + uid + "-gpu-0"), r.getDevices(0).getCdiDeviceIdsList());
        assertEquals("aaaaaaaa-0000-0000-0000-00000000000a", r.getDevices(0).getShareId());
        assertEquals(written, Files.readString(spec), "the re-prepare rewrote nothing");
        assertEquals("gpu-0", r.getDevices(0).getDeviceName());

        // 80 GiB - 40 GiB leave 40 GiB: 50 GiB is refused, 40 GiB fits
        String big = Claims.allocated(client, "big", Claims.share("gpu-0", "50Gi", "20", null));
        String e = Kubelet.prepare(stub, Kubelet.claim(Claims.NS, "big", big)).getClaimsOrThrow(big).getError();
        assertTrue(e.contains("does not fit"), e);
        String fits = Claims.allocated(client, "fits", Claims.share("gpu-0", "40Gi", "20", null));
        assertEquals("", Kubelet.prepare(stub, Kubelet.claim(Claims.NS, "fits", fits)).getClaimsOrThrow(fits).getError());
    }

    private static NodePrepareResourcesResponse answerOf(ListenableFuture<NodePrepareResourcesResponse> f) {
        try {
            return f.get();
        } catch (Exception e) {
            return null;
        }
    }

    @Test
    void aRestartAfterAnUnprepareHasNothingToRestore() throws Exception {
        DraDriver first = start("t4x4");
        DRAPluginGrpc.DRAPluginBlockingStub stub = kubelet.v1(register());
        String uid = Claims.allocated(client, "c1", Claims.whole("gpu-1"));
        assertEquals("", Kubelet.prepare(stub, Kubelet.claim(Claims.NS, "c1", uid)).getClaimsOrThrow(uid).getError());
        assertEquals("", Kubelet.unprepare(stub, Kubelet.claim(Claims.NS, "c1", uid)).getClaimsOrThrow(uid).getError());
        first.close();
        DraDriver second = start("t4x4");
        assertEquals(List.of(), second.claims().all());
        assertFalse(Files.exists(cdi.resolve("qgpu.io-gpu_" + uid + ".json")));
    }

    /**
     * A driver killed between creating a write's temporary file and renaming it (the state file's or a CDI
     * spec's) leaves that file behind, with a leading dot and {@code .tmp}: the next start removes them, before it
     * writes anything, and leaves every other file alone. ({@code KillNineTest} met such a CDI temporary file
     * after a real {@code kill -9}.)
     */
    @Test
    void aStartRemovesTheTemporaryFilesOfWritesAKillCutShort() throws Exception {
        Files.createDirectories(cdi);
        Path specTmp = Files.createTempFile(cdi, ".qgpu.io-gpu_00000000-0000-0000-0000-000000006430.json", ".tmp");
        Path stateTmp = Files.createTempFile(tmp, "." + state.getFileName(), ".tmp");
        Path othersTmp = Files.createTempFile(cdi, ".nvidia.com-gpu_x.json", ".tmp");
        start("t4x4");
        assertFalse(Files.exists(specTmp), "the unfinished CDI spec write's temporary file is removed");
        assertFalse(Files.exists(stateTmp), "the unfinished state write's temporary file is removed");
        assertTrue(Files.exists(othersTmp), "another vendor's temporary file is left alone");
        DRAPluginGrpc.DRAPluginBlockingStub stub = kubelet.v1(register());
        String uid = Claims.allocated(client, "c1", Claims.whole("gpu-1"));
        assertEquals("", Kubelet.prepare(stub, Kubelet.claim(Claims.NS, "c1", uid)).getClaimsOrThrow(uid).getError());
    }
}
