package io.qgpu.core.gate;

import java.util.ArrayList;
import java.util.List;

/** Collects events; thread-safe. */
final class RecordingListener implements GateListener {
    private final List<GateEvent> events = new ArrayList<>();

    @Override
    public synchronized void onEvent(GateEvent event) {
        events.add(event);
    }

    synchronized List<GateEvent> all() {
        return List.copyOf(events);
    }

    synchronized <T extends GateEvent> List<T> of(Class<T> type) {
        List<T> out = new ArrayList<>();
        for (GateEvent e : events) {
            if (type.isInstance(e)) {
                out.add(type.cast(e));
            }
        }
        return out;
    }

    synchronized void clear() {
        events.clear();
    }
}
