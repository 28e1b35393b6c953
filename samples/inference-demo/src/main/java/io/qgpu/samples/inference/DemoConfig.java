package io.qgpu.samples.inference;

import java.time.Duration;

/**
 * The demo's load: online requests come in bursts (open loop: each is sent at its planned time
 * whatever happened to the ones before), an offline job runs slices on its own threads all the time.
 *
 * @param bursts          how many bursts of online requests
 * @param burstSize       requests per burst
 * @param requestInterval time between requests within a burst
 * @param pause           quiet time after each burst (offline work gets the GPU back after the release delay)
 * @param onlineKernel    GPU time of one online request
 * @param offlineWorkers  threads of the offline job
 * @param offlineSlice    GPU time of one offline slice (the offline side checkpoints between slices)
 * @param releaseDelay    the gate's release delay
 */
record DemoConfig(int bursts, int burstSize, Duration requestInterval, Duration pause, Duration onlineKernel,
                  int offlineWorkers, Duration offlineSlice, Duration releaseDelay) {

    static DemoConfig defaults() {
        return new DemoConfig(8, 40, Duration.ofMillis(5), Duration.ofMillis(300), Duration.ofMillis(2), 3,
                Duration.ofMillis(4), Duration.ofMillis(100));
    }

    /** A run of a second or two, for the smoke test. */
    static DemoConfig quick() {
        return new DemoConfig(2, 10, Duration.ofMillis(5), Duration.ofMillis(150), Duration.ofMillis(1), 2,
                Duration.ofMillis(2), Duration.ofMillis(50));
    }

    int requests() {
        return bursts * burstSize;
    }
}
