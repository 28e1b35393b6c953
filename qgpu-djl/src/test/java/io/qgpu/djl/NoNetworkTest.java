package io.qgpu.djl;

import static org.junit.jupiter.api.Assertions.*;

import ai.djl.Model;
import ai.djl.inference.Predictor;
import ai.djl.util.Utils;
import java.io.IOException;
import java.net.Proxy;
import java.net.URL;
import java.net.URLConnection;
import java.net.URLStreamHandler;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * The real model runs without the network: with the build's settings (DJL offline, telemetry off, caches
 * under target/), starting DJL's ONNX Runtime engine and predicting opens no http or https connection. The test
 * installs the JVM's URL stream handler factory for those protocols (once per JVM: the build runs this class
 * alone in a JVM of its own, the {@code no-network} execution in the pom, so DJL's engine also starts inside
 * the test); every connection is recorded and refused.
 *
 * <p>Checked by hand: with {@code ai.djl.offline} and {@code OPT_OUT_TRACKING} set to {@code false} in the pom,
 * the test fails, naming DJL's engine start asking {@code http://169.254.169.254/latest/api/token} (the cloud
 * metadata address its telemetry reads; DJL opens it with {@code Proxy.NO_PROXY}, so a proxy selector would not
 * see it).
 */
class NoNetworkTest {

    @Test
    void startingTheEngineAndPredictingOpensNoConnection() throws Exception {
        List<String> opened = new CopyOnWriteArrayList<>();
        URL.setURLStreamHandlerFactory(protocol -> protocol.equals("http") || protocol.equals("https")
                ? new URLStreamHandler() {
                    @Override
                    protected URLConnection openConnection(URL u) throws IOException {
                        opened.add(u.toString());
                        throw new IOException("no network in this test: " + u);
                    }

                    @Override
                    protected URLConnection openConnection(URL u, Proxy p) throws IOException {
                        return openConnection(u);
                    }
                }
                : null);
        try (Model model = OrtFixture.load();
             Predictor<float[], float[]> p = model.newPredictor(new OrtFixture.RowTranslator())) {
            float[] x = OrtFixture.row(1);
            assertArrayEquals(OrtFixture.MLP.forward(x), p.predict(x), 1e-5f);
        }
        assertEquals(List.of(), opened);
        assertTrue(Utils.isOfflineMode(), "the build runs DJL offline");
    }
}
