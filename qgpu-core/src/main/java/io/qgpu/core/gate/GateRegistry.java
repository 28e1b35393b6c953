package io.qgpu.core.gate;

import io.qgpu.api.Validate;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * One {@link Gate} per GPU: {@link #gate(String)} returns the same gate for the same GPU UUID for the
 * life of the registry. {@link #shared()} is the process-wide registry with default settings; create
 * your own to choose settings per GPU.
 *
 * <pre>{@code
 * GateRegistry gates = GateRegistry.create(uuid -> GateConfig.custom().policy(IsolationPolicy.ELASTIC).build());
 * Gate gpu0 = gates.gate("GPU-0b5c...");
 * assert gpu0 == gates.gate("GPU-0b5c...");
 * }</pre>
 *
 * <p>Thread safety: thread-safe.
 */
public final class GateRegistry implements AutoCloseable {

    private static final GateRegistry SHARED = new GateRegistry(uuid -> GateConfig.ofDefaults());

    private final Function<String, GateConfig> configFor;
    private final Map<String, Gate> gates = new ConcurrentHashMap<>();
    private volatile boolean closed;

    private GateRegistry(Function<String, GateConfig> configFor) {
        this.configFor = configFor;
    }

    /** The process-wide registry: default settings, never closed. */
    public static GateRegistry shared() {
        return SHARED;
    }

    /** A registry whose gates all use {@code config}. */
    public static GateRegistry create(GateConfig config) {
        Validate.notNull("gateRegistry.config", config);
        return new GateRegistry(uuid -> config);
    }

    /** A registry that asks {@code configFor} for each GPU's settings when its gate is first needed. */
    public static GateRegistry create(Function<String, GateConfig> configFor) {
        return new GateRegistry(Validate.notNull("gateRegistry.configFor", configFor));
    }

    /**
     * The gate of {@code gpuUuid}, created on first use.
     *
     * @throws io.qgpu.api.InvalidValueException if the UUID is blank
     * @throws GateClosedException               if the registry is closed
     */
    public Gate gate(String gpuUuid) {
        Validate.notBlank("gateRegistry.gpuUuid", gpuUuid);
        if (closed) {
            throw new GateClosedException(gpuUuid);
        }
        return gates.computeIfAbsent(gpuUuid, uuid -> {
            GateConfig c = configFor.apply(uuid);
            if (c == null) {
                throw new io.qgpu.api.InvalidValueException("gateRegistry.config[" + uuid + "]", null,
                        "the config function returned null");
            }
            return Gate.create(uuid, c);
        });
    }

    /** The gates created so far. */
    public List<Gate> gates() {
        return List.copyOf(gates.values());
    }

    /** Closes every gate (the shared registry cannot be closed). Closing twice is safe. */
    @Override
    public void close() {
        if (this == SHARED) {
            throw new UnsupportedOperationException("the shared gate registry lives as long as the process");
        }
        closed = true;
        for (Gate g : gates.values()) {
            g.close();
        }
    }
}
