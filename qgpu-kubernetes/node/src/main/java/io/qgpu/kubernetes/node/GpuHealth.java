package io.qgpu.kubernetes.node;

import io.qgpu.api.Health;
import io.qgpu.api.Ticker;
import io.qgpu.api.Validate;
import io.qgpu.api.spi.GpuHealthEvent;
import io.qgpu.nvml.Nvml;
import io.qgpu.nvml.NvmlException;
import io.qgpu.nvml.health.NvmlHealthMonitor;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Feeds NVML health into a node agent (the device plugin's pool, the DRA driver's slice publisher): an
 * Xid critical error (one NVML does not count as an application error) or a lost GPU makes the GPU
 * Unhealthy; after {@code recoverAfter} without a further such event, and when NVML answers for the GPU
 * again, it is reported Healthy again (to the NVML session, whose listeners include the sink).
 * {@link #recoverDue()} does that check; the agents call it periodically, tests call it after moving
 * their ticker.
 *
 * <pre>{@code
 * try (GpuHealth h = GpuHealth.start(nvml, pool::setHealth, Ticker.system(), Duration.ofMinutes(5))) {
 *     h.recoverDue();
 * }
 * }</pre>
 *
 * <p>Thread safety: thread-safe.
 */
public final class GpuHealth implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(GpuHealth.class);

    private final Nvml nvml;
    private final BiConsumer<String, Health> sink;
    private final Ticker ticker;
    private final long recoverAfterNanos;
    private final Map<String, Long> lastBad = new ConcurrentHashMap<>();
    private final Nvml.Registration registration;
    private final NvmlHealthMonitor monitor;

    private GpuHealth(Nvml nvml, BiConsumer<String, Health> sink, Ticker ticker, Duration recoverAfter) {
        this.nvml = nvml;
        this.sink = sink;
        this.ticker = ticker;
        this.recoverAfterNanos = recoverAfter.toNanos();
        this.registration = nvml.addHealthListener(this::onChange);
        NvmlHealthMonitor m;
        try {
            m = NvmlHealthMonitor.builder(nvml).waitTimeout(Duration.ofMillis(200)).start();
        } catch (RuntimeException e) {
            registration.close();
            throw e;
        }
        this.monitor = m;
        for (String uuid : nvml.unhealthyGpus()) {
            lastBad.put(uuid, ticker.read());
            sink.accept(uuid, Health.UNHEALTHY);
        }
    }

    /**
     * Starts watching.
     *
     * @param sink         told each GPU's health as it changes (UUID, health), on NVML's event thread
     * @param recoverAfter how long a GPU must go without a critical event before it counts as healthy again
     */
    public static GpuHealth start(Nvml nvml, BiConsumer<String, Health> sink, Ticker ticker, Duration recoverAfter) {
        Validate.notNull("gpuHealth.nvml", nvml);
        Validate.notNull("gpuHealth.sink", sink);
        Validate.notNull("gpuHealth.ticker", ticker);
        if (recoverAfter == null || recoverAfter.isNegative() || recoverAfter.isZero()) {
            throw new IllegalArgumentException("gpuHealth.recoverAfter = " + recoverAfter + ": must be positive");
        }
        return new GpuHealth(nvml, sink, ticker, recoverAfter);
    }

    /** The UUIDs of the GPUs watched for Xid events. */
    public List<String> watchedGpus() {
        return monitor.watchedGpus();
    }

    private void onChange(GpuHealthEvent e) {
        if (e.health() == Health.UNHEALTHY) {
            lastBad.put(e.gpuUuid(), ticker.read());
        } else {
            lastBad.remove(e.gpuUuid());
        }
        sink.accept(e.gpuUuid(), e.health());
    }

    /**
     * Reports Healthy every unhealthy GPU whose last critical event is at least {@code recoverAfter}
     * old and that NVML answers for.
     *
     * @return the GPUs reported healthy now
     */
    public List<String> recoverDue() {
        long now = ticker.read();
        List<String> back = new java.util.ArrayList<>();
        for (Map.Entry<String, Long> e : lastBad.entrySet()) {
            String uuid = e.getKey();
            if (now - e.getValue() < recoverAfterNanos) {
                continue;
            }
            try {
                nvml.deviceByUuid(uuid).index();
            } catch (NvmlException ex) {
                LOG.info("GPU {} still does not answer NVML ({}); stays unhealthy", uuid, ex.result().cName());
                continue;
            }
            if (lastBad.remove(uuid, e.getValue())) {
                nvml.reportHealth(GpuHealthEvent.of(uuid, Health.HEALTHY,
                        "no critical Xid for " + Duration.ofNanos(now - e.getValue()) + " and NVML answers"));
                back.add(uuid);
            }
        }
        return List.copyOf(back);
    }

    @Override
    public void close() {
        try {
            monitor.close();
        } finally {
            registration.close();
        }
    }
}
