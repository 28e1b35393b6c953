package io.qgpu.kubernetes.node.reconcile;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a node agent opened while starting (the NVML session, the health watch, the MPS supervisor, the
 * servers and their sockets, the timer), each added the moment it is open, so that a start that fails at any
 * later step and the agent's shutdown close exactly those, newest first.
 *
 * <pre>{@code
 * OpenedResources opened = new OpenedResources("qgpu-dra-driver");
 * try {
 *     Nvml nvml = opened.add("NVML session", AgentStartup.openNvml(lib, machine));
 *     GpuHealth health = opened.add("GPU health watch", GpuHealth.start(nvml, sink, ticker, recoverAfter));
 *     DriverSockets sockets = opened.add("gRPC sockets", new DriverSockets(...)).start(...);
 *     return new Agent(opened);
 * } catch (IOException | RuntimeException e) {
 *     opened.closeAfterFailure(e);
 *     throw e;
 * }
 * }</pre>
 *
 * <p>Each close is attempted even when an earlier one throws; failures are logged (and, after a failed start,
 * added as suppressed to the start's exception). Closing twice closes nothing the second time.
 *
 * <p>Thread safety: thread-safe (serialised on this object).
 */
public final class OpenedResources implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(OpenedResources.class);

    private record Opened(String what, AutoCloseable resource) {
    }

    private final String agent;
    private final Deque<Opened> opened = new ArrayDeque<>();
    private boolean closed;

    /** @param agent names the agent in logs */
    public OpenedResources(String agent) {
        this.agent = Objects.requireNonNull(agent, "agent");
    }

    /**
     * Records a resource that is open now; returns it.
     *
     * @throws IllegalStateException after {@link #close()} (the resource is closed first)
     */
    public synchronized <T extends AutoCloseable> T add(String what, T resource) {
        Objects.requireNonNull(resource, what);
        if (closed) {
            closeOne(new Opened(what, resource), null);
            throw new IllegalStateException(agent + " is closed: " + what + " was closed again at once");
        }
        opened.push(new Opened(Objects.requireNonNull(what, "what"), resource));
        return resource;
    }

    /** What is open, oldest first, by the names given to {@link #add}. */
    public synchronized java.util.List<String> names() {
        java.util.List<String> out = new java.util.ArrayList<>();
        opened.descendingIterator().forEachRemaining(o -> out.add(o.what()));
        return java.util.List.copyOf(out);
    }

    /** Closes everything, newest first; failures are logged. Idempotent. */
    @Override
    public synchronized void close() {
        closeAll(null);
    }

    /** As {@link #close()}, adding close failures as suppressed to the exception that failed the start. */
    public synchronized void closeAfterFailure(Throwable startFailure) {
        closeAll(startFailure);
    }

    private void closeAll(Throwable cause) {
        if (closed) {
            return;
        }
        closed = true;
        while (!opened.isEmpty()) {
            closeOne(opened.pop(), cause);
        }
    }

    private void closeOne(Opened o, Throwable cause) {
        try {
            o.resource().close();
            LOG.debug("{}: closed {}", agent, o.what());
        } catch (Exception e) {
            LOG.error("{}: closing {} failed: {}", agent, o.what(), e.getMessage());
            if (cause != null) {
                cause.addSuppressed(e);
            }
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
