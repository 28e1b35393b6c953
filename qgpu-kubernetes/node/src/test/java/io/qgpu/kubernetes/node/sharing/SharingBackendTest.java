package io.qgpu.kubernetes.node.sharing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.qgpu.api.InvalidValueException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class SharingBackendTest {

    @ParameterizedTest
    @CsvSource({"none, NONE", "mps, MPS", "hami-core, HAMI_CORE", "MPS, MPS", "' Hami-Core ', HAMI_CORE"})
    void parsesTheWireNames(String value, SharingBackend expected) {
        assertEquals(expected, SharingBackend.parse(value));
        assertEquals(expected, SharingBackend.parse(expected.wireName()));
    }

    @Test
    void anUnknownValueNamesTheFlagAndTheValue() {
        InvalidValueException e = assertThrows(InvalidValueException.class, () -> SharingBackend.parse("mig"));
        assertEquals("--sharing = \"mig\": must be one of none, mps, hami-core", e.getMessage());
        assertEquals("--sharing", e.field());
        assertEquals("mig", e.value());
    }

    @Test
    void aMissingValueToo() {
        InvalidValueException e = assertThrows(InvalidValueException.class, () -> SharingBackend.parse(null));
        assertEquals("--sharing = null: must be one of none, mps, hami-core", e.getMessage());
        assertEquals("--sharing = \"\": must be one of none, mps, hami-core",
                assertThrows(InvalidValueException.class, () -> SharingBackend.parse("")).getMessage());
    }
}
