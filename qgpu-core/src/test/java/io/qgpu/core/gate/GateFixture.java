package io.qgpu.core.gate;

import java.time.Duration;
import java.util.function.UnaryOperator;

/**
 * A gate on the manual clock with an online tenant {@code chat}, an offline tenant {@code train}
 * and a recording listener; usage reports off unless the config says otherwise.
 */
final class GateFixture {
    final FakeClock clock;
    final Gate gate;
    final Tenant chat;
    final Tenant train;
    final RecordingListener events = new RecordingListener();

    GateFixture(String gpu, long startNanos, UnaryOperator<GateConfig.Builder> config) {
        clock = new FakeClock(startNanos);
        gate = Gate.create(gpu, config.apply(clock.config().usageReportInterval(Duration.ZERO)).build());
        chat = gate.register(GateTenantSpec.online("chat").build());
        train = gate.register(GateTenantSpec.offline("train").build());
        gate.addListener(events);
    }
}
