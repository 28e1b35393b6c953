package io.qgpu.nvml.health;

import io.qgpu.api.Validate;
import io.qgpu.api.spi.GpuHealthEvent;
import io.qgpu.api.spi.GpuHealthListener;
import io.qgpu.nvml.Nvml;
import io.qgpu.nvml.NvmlDevice;
import io.qgpu.nvml.NvmlEvent;
import io.qgpu.nvml.NvmlEventSet;
import io.qgpu.nvml.NvmlException;
import io.qgpu.nvml.NvmlReturn;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Watches the GPUs of an {@link Nvml} session for Xid critical errors on a background daemon thread and
 * marks a GPU unhealthy when one arrives, unless its Xid is in the ignored list (Xids that an
 * application causes, not the device: by default 13, 31, 43, 45, 68 and 109). GPUs found lost by any
 * call of the session are marked unhealthy too (the session does that itself). Listeners are told of
 * each change once.
 *
 * <pre>{@code
 * try (NvmlHealthMonitor monitor = NvmlHealthMonitor.builder(nvml)
 *         .listener(e -> ledger.setHealth(e.gpuUuid(), e.health()))
 *         .start()) {
 *     ... serve ...
 * }
 * }</pre>
 *
 * <p>The thread waits on {@code nvmlEventSetWait_v2} with a timeout ({@link Builder#waitTimeout}), so
 * {@link #close()} stops it within about one timeout and then frees the event set.
 *
 * <p>Thread safety: thread-safe. Listeners run on the monitor's thread (Xids) or on the thread whose
 * call found a GPU lost.
 */
public final class NvmlHealthMonitor implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(NvmlHealthMonitor.class);

    /** Xids caused by applications rather than the device (NVIDIA's Xid catalogue). */
    public static final Set<Long> DEFAULT_IGNORED_XIDS = Set.of(13L, 31L, 43L, 45L, 68L, 109L);

    private static final Map<Long, String> XID_TEXT = Map.ofEntries(
            Map.entry(48L, "double-bit ECC error"),
            Map.entry(62L, "internal micro-controller halt"),
            Map.entry(63L, "ECC page retirement or row remapping event"),
            Map.entry(64L, "ECC page retirement or row remapping failure"),
            Map.entry(74L, "NVLink error"),
            Map.entry(79L, "GPU has fallen off the bus"),
            Map.entry(92L, "high single-bit ECC error rate"),
            Map.entry(94L, "contained ECC error"),
            Map.entry(95L, "uncontained ECC error"),
            Map.entry(119L, "GSP RPC timeout"),
            Map.entry(120L, "GSP error"));

    private final Nvml nvml;
    private final Set<Long> ignoredXids;
    private final int waitTimeoutMs;
    private final List<Nvml.Registration> registrations;
    private final NvmlEventSet eventSet;
    private final List<NvmlDevice> watched;
    private final List<String> unwatched;
    private final Thread thread;
    private final CountDownLatch stop = new CountDownLatch(1);
    private final AtomicLong eventsSeen = new AtomicLong();
    private volatile boolean closed;

    private NvmlHealthMonitor(Builder b) {
        this.nvml = b.nvml;
        this.ignoredXids = Set.copyOf(b.ignoredXids);
        this.waitTimeoutMs = Math.toIntExact(b.waitTimeout.toMillis());
        List<Nvml.Registration> regs = new ArrayList<>();
        for (GpuHealthListener l : b.listeners) {
            regs.add(nvml.addHealthListener(l));
        }
        this.registrations = List.copyOf(regs);
        NvmlEventSet set = null;
        List<NvmlDevice> ok = new ArrayList<>();
        List<String> notOk = new ArrayList<>();
        try {
            set = nvml.createEventSet();
            for (NvmlDevice d : devicesOf(nvml, notOk)) {
                try {
                    set.register(d, NvmlEventSet.XID_CRITICAL_ERROR);
                    ok.add(d);
                } catch (NvmlException e) {
                    if (e.result() != NvmlReturn.NOT_SUPPORTED && e.result() != NvmlReturn.GPU_IS_LOST) {
                        throw e;
                    }
                    LOG.warn("GPU {} is not watched for Xid errors: {}", d.uuid(), e.getMessage());
                    notOk.add(d.uuid() + ": " + e.result().cName());
                }
            }
        } catch (RuntimeException e) {
            if (set != null) {
                set.close();
            }
            regs.forEach(Nvml.Registration::close);
            throw e;
        }
        this.eventSet = set;
        this.watched = List.copyOf(ok);
        this.unwatched = List.copyOf(notOk);
        this.thread = new Thread(this::run, "qgpu-nvml-health");
        this.thread.setDaemon(true);
        this.thread.start();
    }

    private static List<NvmlDevice> devicesOf(Nvml nvml, List<String> notOk) {
        List<NvmlDevice> all = new ArrayList<>();
        int n = nvml.deviceCount();
        for (int i = 0; i < n; i++) {
            try {
                all.add(nvml.device(i));
            } catch (NvmlException e) {
                if (e.result() != NvmlReturn.GPU_IS_LOST) {
                    throw e;
                }
                notOk.add("index " + i + ": " + e.result().cName());
            }
        }
        return all;
    }

    public static Builder builder(Nvml nvml) {
        return new Builder(nvml);
    }

    /** UUIDs of the GPUs registered for Xid events. */
    public List<String> watchedGpus() {
        return watched.stream().map(NvmlDevice::uuid).toList();
    }

    /** GPUs that could not be registered (lost, or without Xid events), in words. */
    public List<String> unwatchedGpus() {
        return unwatched;
    }

    /** The Xids that do not make a GPU unhealthy. */
    public Set<Long> ignoredXids() {
        return new TreeSet<>(ignoredXids);
    }

    /** Events received so far, ignored ones included. */
    public long eventsSeen() {
        return eventsSeen.get();
    }

    /** Whether the monitor thread is running. */
    public boolean isRunning() {
        return thread.isAlive();
    }

    private void run() {
        int failures = 0;
        while (!closed) {
            try {
                Optional<NvmlEvent> event = eventSet.await(waitTimeoutMs);
                failures = 0;
                event.ifPresent(this::handle);
            } catch (NvmlException e) {
                if (closed || e.result() == NvmlReturn.UNINITIALIZED) {
                    return;
                }
                if (e.result() == NvmlReturn.GPU_IS_LOST) {
                    probeAll();
                    continue;
                }
                failures++;
                LOG.error("waiting for NVML events failed ({} in a row)", failures, e);
                long backoffMs = Math.min(30_000L, 100L << Math.min(failures, 8));
                try {
                    if (stop.await(backoffMs, TimeUnit.MILLISECONDS)) {
                        return;
                    }
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    return;
                }
            } catch (RuntimeException e) {
                LOG.error("health monitor failed on an event; going on", e);
            }
        }
    }

    private void handle(NvmlEvent e) {
        eventsSeen.incrementAndGet();
        if (!e.isXid()) {
            LOG.debug("ignoring NVML event type {} on {}", e.eventType(), e.device().uuid());
            return;
        }
        long xid = e.eventData();
        String uuid = e.device().uuid();
        if (ignoredXids.contains(xid)) {
            LOG.info("GPU {} reported Xid {}, an application error: GPU stays healthy", uuid, xid);
            return;
        }
        String text = XID_TEXT.getOrDefault(xid, "critical error");
        nvml.reportHealth(GpuHealthEvent.xid(uuid, xid, "Xid " + xid + ": " + text));
    }

    /** The event wait said a GPU is lost without naming it: ask each (a lost one is marked by the session). */
    private void probeAll() {
        for (NvmlDevice d : watched) {
            try {
                d.index();
            } catch (NvmlException e) {
                LOG.debug("probe of {} failed: {}", d.uuid(), e.getMessage());
            }
        }
    }

    /** Stops the thread (within about one wait timeout), frees the event set and removes the listeners. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        stop.countDown();
        boolean interrupted = false;
        while (thread.isAlive()) {
            try {
                thread.join();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        try {
            if (!nvml.isClosed()) {
                eventSet.close();
            }
        } finally {
            registrations.forEach(Nvml.Registration::close);
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * Options of a monitor.
     *
     * <pre>{@code
     * NvmlHealthMonitor m = NvmlHealthMonitor.builder(nvml).ignoredXids(List.of(13L, 43L)).waitTimeout(Duration.ofMillis(250)).start();
     * }</pre>
     *
     * <p>Thread safety: not thread-safe; use from one thread.
     */
    public static final class Builder {
        private final Nvml nvml;
        private Set<Long> ignoredXids = DEFAULT_IGNORED_XIDS;
        private Duration waitTimeout = Duration.ofMillis(500);
        private final List<GpuHealthListener> listeners = new ArrayList<>();

        private Builder(Nvml nvml) {
            this.nvml = Validate.notNull("health.nvml", nvml);
        }

        /** Xids that do not make a GPU unhealthy (replaces the default list; empty: every Xid counts). */
        public Builder ignoredXids(Collection<Long> xids) {
            Validate.notNull("health.ignoredXids", xids);
            Set<Long> copy = new TreeSet<>();
            for (Long x : xids) {
                Validate.notNull("health.ignoredXids[]", x);
                Validate.atLeast("health.ignoredXids[]", x, 0);
                copy.add(x);
            }
            this.ignoredXids = copy;
            return this;
        }

        /** How long one event wait lasts, so how long {@link NvmlHealthMonitor#close()} may take (10 ms .. 60 s). */
        public Builder waitTimeout(Duration timeout) {
            Validate.notNull("health.waitTimeout", timeout);
            if (timeout.compareTo(Duration.ofMillis(10)) < 0 || timeout.compareTo(Duration.ofSeconds(60)) > 0) {
                throw new io.qgpu.api.InvalidValueException("health.waitTimeout", timeout,
                        "must be between 10 ms and 60 s");
            }
            this.waitTimeout = timeout;
            return this;
        }

        /** A listener told of every health change in the session while the monitor runs. */
        public Builder listener(GpuHealthListener listener) {
            listeners.add(Validate.notNull("health.listener", listener));
            return this;
        }

        /**
         * Registers every GPU for Xid events and starts the thread.
         *
         * @throws NvmlException if the event set cannot be made or a GPU refuses for another reason than
         *                       {@code NOT_SUPPORTED} or {@code GPU_IS_LOST}
         */
        public NvmlHealthMonitor start() {
            return new NvmlHealthMonitor(this);
        }
    }
}
