package io.qgpu.djl;

import static org.junit.jupiter.api.Assertions.*;

import ai.djl.Model;
import ai.djl.inference.Predictor;
import ai.djl.util.Utils;
import java.io.IOException;
import java.net.Proxy;
import java.net.ProxySelector;
import java.net.SocketAddress;
import java.net.URI;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * The real model runs without the network: with the build's settings (DJL offline, telemetry off, caches
 * under target/), loading ONNX Runtime and predicting opens no URL connection. Every {@code HttpURLConnection}
 * asks the default {@link ProxySelector} first, so a recording one sees any attempt (DJL's engine start, when
 * telemetry is on and DJL is online, asks the EC2 metadata address). The build runs this class alone in a JVM
 * of its own (the {@code no-network} execution in the pom), so that DJL's engine starts inside the test.
 */
class NoNetworkTest {

    @Test
    void loadingTheEngineAndPredictingOpensNoConnection() throws Exception {
        List<URI> asked = new CopyOnWriteArrayList<>();
        ProxySelector before = ProxySelector.getDefault();
        ProxySelector.setDefault(new ProxySelector() {
            @Override
            public List<Proxy> select(URI uri) {
                asked.add(uri);
                return List.of(Proxy.NO_PROXY);
            }

            @Override
            public void connectFailed(URI uri, SocketAddress sa, IOException ioe) {
            }
        });
        try (Model model = OrtFixture.load();
             Predictor<float[], float[]> p = model.newPredictor(new OrtFixture.RowTranslator())) {
            float[] x = OrtFixture.row(1);
            assertArrayEquals(OrtFixture.MLP.forward(x), p.predict(x), 1e-5f);
        } finally {
            ProxySelector.setDefault(before);
        }
        assertEquals(List.of(), asked);
        assertTrue(Utils.isOfflineMode(), "the build runs DJL offline");
    }
}
