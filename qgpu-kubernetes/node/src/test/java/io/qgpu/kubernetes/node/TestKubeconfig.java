package io.qgpu.kubernetes.node;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Kubeconfig files for the agents' start-up checks of the API server: one naming a server (a closed local port, a
 * host name that does not resolve, a mock server). Shared with the agents' tests through this module's test jar.
 */
public final class TestKubeconfig {
    /** A host name no resolver answers (RFC 6761 reserves {@code .invalid}). */
    public static final String UNRESOLVABLE = "qgpu-no-such-api-server.invalid";

    private TestKubeconfig() {
    }

    /** A kubeconfig in {@code dir} whose cluster is {@code server} (a URL), with a token and TLS checks off. */
    public static Path write(Path dir, String server) {
        String text = """
                apiVersion: v1
                kind: Config
                clusters:
                - name: c
                  cluster:
                    server: %s
                    insecure-skip-tls-verify: true
                contexts:
                - name: c
                  context:
                    cluster: c
                    user: u
                    namespace: default
                current-context: c
                users:
                - name: u
                  user:
                    token: not-a-token
                """.formatted(server);
        try {
            return Files.writeString(Files.createTempFile(dir, "kubeconfig", ".yaml"), text);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A local port nothing listens on (bound, then closed). */
    public static int closedPort() {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
