package io.qgpu.samples.djl;

import java.time.Duration;

/**
 * The demo's load: online requests in bursts (open loop), an offline job running batches on its own threads
 * all the time, both through the same real model.
 *
 * @param bursts          bursts of online requests
 * @param burstSize       requests per burst
 * @param requestInterval time between requests within a burst
 * @param pause           quiet time after each burst
 * @param requestRows     rows one request predicts (one batch)
 * @param offlineWorkers  threads of the offline job
 * @param offlineRows     rows of one offline batch (the offline side checkpoints between batches)
 * @param releaseDelay    the gate's release delay
 * @param hidden          widths of the model's hidden layers (256 inputs, 64 outputs)
 */
record DemoConfig(int bursts, int burstSize, Duration requestInterval, Duration pause, int requestRows,
                  int offlineWorkers, int offlineRows, Duration releaseDelay, int[] hidden) {

    static DemoConfig defaults() {
        return new DemoConfig(8, 40, Duration.ofMillis(5), Duration.ofMillis(300), 8, 3, 64,
                Duration.ofMillis(100), new int[] {512, 512});
    }

    /** A run of a few seconds, for the smoke test. */
    static DemoConfig quick() {
        return new DemoConfig(2, 10, Duration.ofMillis(5), Duration.ofMillis(150), 4, 2, 16,
                Duration.ofMillis(50), new int[] {128});
    }

    int requests() {
        return bursts * burstSize;
    }
}
