package io.qgpu.api;

/**
 * A source of monotonic nanoseconds. Every engine takes one, so that tests and the simulator drive
 * time by hand and real deployments use {@link #system()}.
 *
 * <pre>{@code
 * Ticker real = Ticker.system();
 * long t0 = real.read();
 * }</pre>
 *
 * <p>Implementations must be thread-safe and never go backwards.
 */
@FunctionalInterface
public interface Ticker {

    /** Nanoseconds from an arbitrary origin. */
    long read();

    /** {@link System#nanoTime()}. */
    static Ticker system() {
        return System::nanoTime;
    }
}
