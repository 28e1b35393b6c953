package io.qgpu.json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.PriorityClass;
import java.util.List;
import org.junit.jupiter.api.Test;

class ClaimPriorityJsonTest {

    @Test
    void priorityWithinClassRoundTripsAndIsLeftOutAtZero() {
        Claim c = Claim.builder("a").memoryGiB(2).priority(PriorityClass.ONLINE).priorityWithinClass(-7).build();
        String json = QgpuJson.writeClaims(List.of(c));
        assertTrue(json.contains("\"priorityWithinClass\":-7") || json.contains("\"priorityWithinClass\" : -7"), json);
        assertEquals(List.of(c), QgpuJson.readClaims(json));
        Claim zero = Claim.builder("b").memoryGiB(2).build();
        assertFalse(QgpuJson.writeClaims(List.of(zero)).contains("priorityWithinClass"));
        assertEquals(0, QgpuJson.readClaim("{\"tenant\": \"b\", \"memoryGiB\": 2}").priorityWithinClass());
    }

    @Test
    void aMistypedPriorityIsRefusedWithItsPath() {
        QgpuJsonException e = assertThrows(QgpuJsonException.class,
                () -> QgpuJson.readClaims("[{\"tenant\": \"a\", \"memoryGiB\": 1, \"priorityWithinClass\": \"high\"}]"));
        assertTrue(e.getMessage().contains("priorityWithinClass"), e.getMessage());
    }
}
