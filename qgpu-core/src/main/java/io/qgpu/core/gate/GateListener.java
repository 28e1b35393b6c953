package io.qgpu.core.gate;

/**
 * Receives a {@link Gate}'s {@link GateEvent}s. Called on the thread that caused the event (an
 * acquiring or closing thread, or the gate's timer thread), never while the gate's lock is held;
 * must be thread-safe and quick. An exception thrown by a listener is logged and does not reach the
 * gate's caller or the other listeners.
 *
 * <pre>{@code
 * GateListener waits = e -> {
 *     if (e instanceof GateEvent.LeaseGranted g && g.waitedNanos() > 1_000_000) {
 *         log.info("{} waited {} us", g.tenant(), g.waitedNanos() / 1000);
 *     }
 * };
 * gate.addListener(waits);
 * }</pre>
 */
@FunctionalInterface
public interface GateListener {

    void onEvent(GateEvent event);
}
