package io.qgpu.core.gate;

import io.qgpu.api.Ticker;
import io.qgpu.api.Validate;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * One {@link Gate} per GPU: {@link #gate(String)} returns the same gate for the same GPU UUID until it
 * is {@linkplain #remove removed} or the registry is closed. {@link #shared()} is the process-wide
 * registry with default settings; create your own to choose settings per GPU.
 *
 * <p>The gates of a registry whose configs name no timer share the registry's one daemon timer
 * thread (started with the first gate), instead of a thread per gate; {@link #close()} closes every
 * gate, including one created concurrently with the close, and then stops that thread.
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
    /** The timer of the gates whose configs name none; one thread for all of them. */
    private final SystemGateTimer timer = new SystemGateTimer(Ticker.system());
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
        Gate g = gates.computeIfAbsent(gpuUuid, uuid -> {
            GateConfig c = configFor.apply(uuid);
            if (c == null) {
                throw new io.qgpu.api.InvalidValueException("gateRegistry.config[" + uuid + "]", null,
                        "the config function returned null");
            }
            return Gate.create(uuid, c, timer.forTicker(c.ticker()));
        });
        // close() sets the flag, then closes what it finds in the map; a gate put into the map after
        // close() looked is seen here (the flag is volatile and the put happened before this read)
        if (closed) {
            g.close();
            throw new GateClosedException(gpuUuid);
        }
        return g;
    }

    /**
     * Closes the gate of {@code gpuUuid} and forgets it; a later {@link #gate(String)} creates a new
     * one. Holders of the old gate get {@link GateClosedException} from it.
     *
     * @return whether there was a gate to remove
     */
    public boolean remove(String gpuUuid) {
        Validate.notBlank("gateRegistry.gpuUuid", gpuUuid);
        Gate g = gates.remove(gpuUuid);
        if (g == null) {
            return false;
        }
        g.close();
        return true;
    }

    /** The gates created so far. */
    public List<Gate> gates() {
        return List.copyOf(gates.values());
    }

    /**
     * Closes every gate, including one that a concurrent {@link #gate(String)} is creating (that call
     * then throws {@link GateClosedException}), and stops the registry's timer thread. Calling it again
     * does nothing.
     *
     * @throws UnsupportedOperationException on {@link #shared()}, which lives as long as the process
     */
    @Override
    public void close() {
        if (this == SHARED) {
            throw new UnsupportedOperationException("the shared gate registry lives as long as the process");
        }
        closed = true;
        for (Gate g : gates.values()) {
            g.close();
        }
        timer.shutdown();
    }
}
