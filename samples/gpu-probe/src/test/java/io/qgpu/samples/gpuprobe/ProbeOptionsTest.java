package io.qgpu.samples.gpuprobe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ProbeOptionsTest {

    @Test
    void defaultsWithoutFlags() throws UsageException {
        assertEquals(ProbeOptions.defaults(), ProbeOptions.parse());
        ProbeOptions d = ProbeOptions.defaults();
        assertEquals("libcuda.so.1", d.library());
        assertEquals(256, d.chunkMiB());
        assertEquals(5.0, d.seconds());
    }

    @Test
    void readsEveryFlagInBothSpellings() throws UsageException {
        ProbeOptions o = ProbeOptions.parse("--label", "mps-30", "--library=/usr/lib/libcuda.so.1", "--device", "1",
                "--chunk-mib", "128", "--max-mib=9000", "--seconds", "2.5", "--iterations", "1000", "--blocks-per-sm", "4",
                "--threads=512", "--start-at", "1790000000000");
        assertEquals(new ProbeOptions("mps-30", "/usr/lib/libcuda.so.1", 1, 128, 9000, 2.5, 1000, 4, 512, 1790000000000L), o);
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "--seconds|abc|--seconds = \"abc\": must be a number of seconds above 0 and at most 3600",
        "--seconds|0|--seconds = \"0\": must be a number of seconds above 0 and at most 3600",
        "--seconds|NaN|--seconds = \"NaN\": must be a number of seconds above 0 and at most 3600",
        "--chunk-mib|0|--chunk-mib = \"0\": must be a whole number between 1 and 1048576",
        "--chunk-mib|1.5|--chunk-mib = \"1.5\": must be a whole number between 1 and 1048576",
        "--device|-1|--device = \"-1\": must be a whole number between 0 and 1023",
        "--max-mib|-5|--max-mib = \"-5\": must be a whole number between 0 and 16777216",
        "--threads|100|--threads = \"100\": must be a multiple of 32 (a whole number of warps)",
        "--threads|2048|--threads = \"2048\": must be a whole number between 32 and 1024",
        "--iterations|0|--iterations = \"0\": must be a whole number between 1 and 2147483647",
        "--label|a b|--label = \"a b\": must be 1 to 64 of A-Z a-z 0-9 . _ -",
        "--frobnicate|3|--frobnicate = \"3\": unknown flag (see --help)",
    })
    void aBadFlagNamesTheFlagAndTheValue(String flag, String value, String message) {
        UsageException e = assertThrows(UsageException.class, () -> ProbeOptions.parse(flag, value));
        assertEquals(message, e.getMessage());
        assertEquals(flag, e.flag());
        assertEquals(value, e.value());
    }

    @Test
    void aFlagWithoutItsValue() {
        UsageException e = assertThrows(UsageException.class, () -> ProbeOptions.parse("--label", "x", "--seconds"));
        assertEquals("--seconds = (missing): needs a value", e.getMessage());
    }

    @Test
    void aWordThatIsNotAFlag() {
        UsageException e = assertThrows(UsageException.class, () -> ProbeOptions.parse("seconds", "3"));
        assertEquals("seconds = \"3\": not a flag: flags start with -- (see --help)", e.getMessage());
    }
}
