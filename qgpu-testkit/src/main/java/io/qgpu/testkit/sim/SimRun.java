package io.qgpu.testkit.sim;

import io.qgpu.api.Ticker;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import org.jspecify.annotations.Nullable;

/** The discrete-event core of one run: virtual clock, event queue, trace (package-internal, single-threaded). */
final class SimRun implements Ticker {

    private record Event(long at, long seq, Runnable action) implements Comparable<Event> {
        @Override
        public int compareTo(Event o) {
            int c = Long.compare(at, o.at);
            return c != 0 ? c : Long.compare(seq, o.seq);
        }
    }

    private final PriorityQueue<Event> queue = new PriorityQueue<>();
    private final @Nullable List<TraceEvent> trace;
    private final long end;
    private long now;
    private long seq;
    private long processed;

    SimRun(long end, boolean recordTrace) {
        this.end = end;
        this.trace = recordTrace ? new ArrayList<>() : null;
    }

    @Override
    public long read() {
        return now;
    }

    long now() {
        return now;
    }

    long end() {
        return end;
    }

    /** Runs {@code action} at virtual time {@code at} (not before now). */
    void at(long at, Runnable action) {
        if (at < now) {
            throw new IllegalStateException("event scheduled in the past: " + at + " < " + now);
        }
        queue.add(new Event(at, seq++, action));
    }

    /** Processes events up to the end; then the clock stands at the end. */
    void run() {
        while (!queue.isEmpty() && queue.peek().at() <= end) {
            Event e = queue.poll();
            now = e.at();
            processed++;
            e.action().run();
        }
        now = end;
    }

    long processed() {
        return processed;
    }

    boolean tracing() {
        return trace != null;
    }

    void trace(String gpu, String tenant, TraceKind kind, String detail) {
        if (trace != null) {
            trace.add(new TraceEvent(now, gpu, tenant, kind, detail));
        }
    }

    void trace(long at, String gpu, String tenant, TraceKind kind, String detail) {
        if (trace != null) {
            trace.add(new TraceEvent(at, gpu, tenant, kind, detail));
        }
    }

    List<TraceEvent> traceEvents() {
        return trace == null ? List.of() : trace;
    }
}
