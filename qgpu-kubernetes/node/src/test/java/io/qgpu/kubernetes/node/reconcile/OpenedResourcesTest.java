package io.qgpu.kubernetes.node.reconcile;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class OpenedResourcesTest {
    final List<String> log = new ArrayList<>();

    AutoCloseable res(String name) {
        return () -> log.add("close " + name);
    }

    @Test
    void closesNewestFirstOnceAndGoesOnAfterAFailure() {
        OpenedResources o = new OpenedResources("agent");
        o.add("nvml", res("nvml"));
        o.add("bad", () -> {
            throw new IllegalStateException("stuck");
        });
        o.add("server", res("server"));
        assertEquals(List.of("nvml", "bad", "server"), o.names());
        IllegalStateException start = new IllegalStateException("start failed");
        o.closeAfterFailure(start);
        assertEquals(List.of("close server", "close nvml"), log);
        assertEquals("stuck", start.getSuppressed()[0].getMessage());
        o.close();
        assertEquals(2, log.size(), "closing twice closes nothing more");
    }

    @Test
    void somethingAddedAfterTheCloseIsClosedAtOnce() {
        OpenedResources o = new OpenedResources("agent");
        o.close();
        assertThrows(IllegalStateException.class, () -> o.add("late", res("late")));
        assertEquals(List.of("close late"), log);
    }
}
