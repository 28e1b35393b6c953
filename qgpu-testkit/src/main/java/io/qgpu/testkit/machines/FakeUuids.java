package io.qgpu.testkit.machines;

import io.qgpu.api.Validate;
import java.nio.charset.StandardCharsets;
import java.util.UUID;

/**
 * Deterministic NVML-style GPU UUIDs for fake machines: the same node name and GPU index always
 * give the same {@code GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx}, so that tests, JSON fixtures and
 * failure messages are stable from run to run and machine to machine.
 *
 * <pre>{@code
 * String uuid = FakeUuids.gpu("dgx-h100-0", 3);   // always the same string
 * }</pre>
 *
 * <p>Thread safety: stateless.
 */
public final class FakeUuids {

    private static final String NAMESPACE = "qgpu-testkit/";

    private FakeUuids() {
    }

    /** The UUID of the GPU with NVML index {@code index} on node {@code nodeName}. */
    public static String gpu(String nodeName, int index) {
        Validate.notBlank("fakeUuids.nodeName", nodeName);
        Validate.atLeast("fakeUuids.index", index, 0);
        byte[] key = (NAMESPACE + nodeName + "/" + index).getBytes(StandardCharsets.UTF_8);
        return "GPU-" + UUID.nameUUIDFromBytes(key);
    }
}
