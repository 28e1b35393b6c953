package io.qgpu.kubernetes.dra;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.StatusRuntimeException;
import io.qgpu.kubernetes.dra.pluginregistration.InfoRequest;
import io.qgpu.kubernetes.dra.pluginregistration.PluginInfo;
import io.qgpu.kubernetes.dra.pluginregistration.RegistrationGrpc;
import io.qgpu.kubernetes.dra.pluginregistration.RegistrationStatus;
import io.qgpu.kubernetes.dra.v1.NodePrepareResourceResponse;
import io.qgpu.kubernetes.dra.v1beta1.NodePrepareResourcesRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Item 2: registration as the kubelet's plugin watcher expects it, both DRA services, stale sockets. */
class RegistrationTest extends DriverTestBase {

    @Test
    void getInfoNamesTheDriverTheAbsoluteEndpointAndBothServices() throws Exception {
        DraDriver driver = start("t4x4");
        assertTrue(Files.exists(registrar.resolve("gpu.qgpu.io-reg.sock")));
        RegistrationGrpc.RegistrationBlockingStub r = kubelet.registration(registrar);
        PluginInfo info = r.getInfo(InfoRequest.getDefaultInstance());
        assertEquals("DRAPlugin", info.getType());
        assertEquals("gpu.qgpu.io", info.getName());
        assertEquals(plugins.toAbsolutePath().resolve("gpu.qgpu.io/dra.sock").toString(), info.getEndpoint());
        assertTrue(Path.of(info.getEndpoint()).isAbsolute());
        assertEquals(List.of("v1.DRAPlugin", "v1beta1.DRAPlugin"), info.getSupportedVersionsList());

        r.notifyRegistrationStatus(RegistrationStatus.newBuilder().setPluginRegistered(true).build());
        assertTrue(driver.registration().lastStatus().getPluginRegistered());
        // a refusal is recorded and answered with an error, as the kubelet's helper does
        StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> r.notifyRegistrationStatus(
                RegistrationStatus.newBuilder().setPluginRegistered(false).setError("version skew").build()));
        assertTrue(e.getStatus().getDescription().contains("version skew"), e.getStatus().toString());
        assertFalse(driver.registration().lastStatus().getPluginRegistered());
    }

    @Test
    void bothDraServicesAnswerOnTheEndpoint() throws Exception {
        start("t4x4");
        PluginInfo info = register();
        String uid = Claims.allocated(client, "c1", Claims.whole("gpu-1"));
        NodePrepareResourceResponse v1 = Kubelet.prepare(kubelet.v1(info), Kubelet.claim(Claims.NS, "c1", uid)).getClaimsOrThrow(uid);
        assertEquals("", v1.getError());
        assertEquals("gpu-1", v1.getDevices(0).getDeviceName());

        io.qgpu.kubernetes.dra.v1beta1.NodePrepareResourceResponse beta = kubelet.v1beta1(info).nodePrepareResources(
                NodePrepareResourcesRequest.newBuilder().addClaims(io.qgpu.kubernetes.dra.v1beta1.Claim.newBuilder()
                        .setNamespace(Claims.NS).setName("c1").setUid(uid)).build()).getClaimsOrThrow(uid);
        assertEquals("", beta.getError());
        assertEquals(v1.getDevices(0).getCdiDeviceIdsList(), beta.getDevices(0).getCdiDeviceIdsList());
        assertEquals("node-a", beta.getDevices(0).getPoolName());
        assertEquals(List.of("gpu"), beta.getDevices(0).getRequestNamesList());

        io.qgpu.kubernetes.dra.v1beta1.NodeUnprepareResourceResponse un = kubelet.v1beta1(info).nodeUnprepareResources(
                io.qgpu.kubernetes.dra.v1beta1.NodeUnprepareResourcesRequest.newBuilder().addClaims(
                        io.qgpu.kubernetes.dra.v1beta1.Claim.newBuilder().setNamespace(Claims.NS).setName("c1").setUid(uid)).build())
                .getClaimsOrThrow(uid);
        assertEquals("", un.getError());
    }

    @Test
    void staleSocketFilesOfAKilledProcessAreReplaced() throws Exception {
        Path reg = registrar.resolve("gpu.qgpu.io-reg.sock");
        Path dra = plugins.resolve("gpu.qgpu.io/dra.sock");
        Files.createDirectories(dra.getParent());
        Files.writeString(reg, "left by a killed driver");
        Files.writeString(dra, "left by a killed driver");
        start("t4x4");
        PluginInfo info = register();
        assertEquals("gpu.qgpu.io", info.getName());
        String uid = Claims.allocated(client, "c1", Claims.whole("gpu-0"));
        assertEquals("", Kubelet.prepare(kubelet.v1(info), Kubelet.claim(Claims.NS, "c1", uid)).getClaimsOrThrow(uid).getError());
    }

    @Test
    void closingRemovesBothSockets() throws Exception {
        DraDriver d = start("t4x4");
        d.close();
        assertFalse(Files.exists(registrar.resolve("gpu.qgpu.io-reg.sock")));
        assertFalse(Files.exists(plugins.resolve("gpu.qgpu.io/dra.sock")));
    }
}
