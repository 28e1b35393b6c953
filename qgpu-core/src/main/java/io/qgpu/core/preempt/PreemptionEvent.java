package io.qgpu.core.preempt;

import io.qgpu.api.PriorityClass;
import io.qgpu.api.Validate;
import org.jspecify.annotations.Nullable;

/**
 * An input of the {@link PreemptionMachine}, stamped with the time it happened ({@code at},
 * nanoseconds of the GPU's {@link io.qgpu.api.Ticker}). Events of one GPU must come in time order.
 *
 * <pre>{@code
 * Transition t = machine.next(state, new PreemptionEvent.Submit(ticker.read(), "infer-1"));
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public sealed interface PreemptionEvent {

    /** When the event happened. */
    long at();

    /** The tenant the event is about, or {@code null} for {@link Tick}. */
    @Nullable String tenant();

    /** A tenant joins the GPU (phase {@code IDLE}). */
    record Register(long at, String tenant, PriorityClass priority) implements PreemptionEvent {
        public Register {
            Validate.notBlank("register.tenant", tenant);
            Validate.notNull("register.priority", priority);
        }
    }

    /** A tenant leaves the GPU, whatever its phase (a crashed process, a finished job). */
    record Deregister(long at, String tenant) implements PreemptionEvent {
        public Deregister {
            Validate.notBlank("deregister.tenant", tenant);
        }
    }

    /** An idle tenant has work. */
    record Submit(long at, String tenant) implements PreemptionEvent {
        public Submit {
            Validate.notBlank("submit.tenant", tenant);
        }
    }

    /** A tenant has no more work. */
    record Idle(long at, String tenant) implements PreemptionEvent {
        public Idle {
            Validate.notBlank("idle.tenant", tenant);
        }
    }

    /** The isolation policy put a ready offline tenant on the GPU (it got the token). */
    record Start(long at, String tenant) implements PreemptionEvent {
        public Start {
            Validate.notBlank("start.tenant", tenant);
        }
    }

    /** A running offline tenant left the GPU but still has work (its grant ended). */
    record Stop(long at, String tenant) implements PreemptionEvent {
        public Stop {
            Validate.notBlank("stop.tenant", tenant);
        }
    }

    /** An offline tenant confirms it has suspended. */
    record Suspended(long at, String tenant) implements PreemptionEvent {
        public Suspended {
            Validate.notBlank("suspended.tenant", tenant);
        }
    }

    /**
     * What the GPU's compute engine says about an offline tenant's usage: from {@code belowFrom} on
     * it has used less than its request over the usage window, as long as it does not run in between
     * ({@link Long#MAX_VALUE}: never, e.g. its request is 0). The machine keeps the latest value per
     * tenant (a tenant it was never told about counts as never below) and, with
     * {@link PreemptionConfig#offlineFloor()}, ends a release delay at once while a held offline tenant
     * is below its request (see {@link PreemptionMachine}). Report it after each time the tenant ran
     * (its usage changed); time sliding by changes nothing, the value already says when it drops below.
     */
    record Usage(long at, String tenant, long belowFrom) implements PreemptionEvent {
        public Usage {
            Validate.notBlank("usage.tenant", tenant);
        }
    }

    /** Time passed: fires the timers that are due (preemption deadline, release delay). */
    record Tick(long at) implements PreemptionEvent {
        @Override
        public @Nullable String tenant() {
            return null;
        }
    }
}
