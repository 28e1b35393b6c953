package io.qgpu.kubernetes.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The agents' start-up checks leave nothing behind, and their one flag parser. */
class AgentChecksTest {
    @TempDir
    Path tmp;

    static List<Path> list(Path dir) throws Exception {
        try (Stream<Path> s = Files.list(dir)) {
            return s.toList();
        }
    }

    @Test
    void theWriteProbeLeavesNothingBehind() throws Exception {
        AgentChecks.writableDirectory("--cdi-root", tmp);
        assertEquals(List.of(), list(tmp), "the probe file is gone");
        AgentChecks.writableFile("--state-file " + tmp.resolve("s/state.json"), tmp.resolve("s/state.json"));
        assertEquals(List.of(), list(tmp.resolve("s")), "the state file's directory is made, and left empty");
    }

    @Test
    void aParentThatIsAFileIsNamed() throws Exception {
        Path file = Files.writeString(tmp.resolve("f"), "x");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> AgentChecks.writableDirectory("--cdi-root", file.resolve("cdi")));
        assertTrue(e.getMessage().startsWith("--cdi-root " + file.resolve("cdi") + ": cannot be created (" + file + " is a file"),
                e.getMessage());
    }

    @Test
    void theFlagParserTakesBothSpellingsAndRefusesWhatItCannotRead() {
        Set<String> valued = Set.of("--a", "--b");
        assertEquals(Map.of("--a", "1", "--b", "2", "--help", ""), AgentFlags.parse(List.of("--a", "1", "--b=2", "--help"), valued));
        assertEquals("unknown argument --c", assertThrows(IllegalArgumentException.class,
                () -> AgentFlags.parse(List.of("--c", "1"), valued)).getMessage());
        assertEquals("--a needs a value", assertThrows(IllegalArgumentException.class,
                () -> AgentFlags.parse(List.of("--a", "--b", "2"), valued)).getMessage());
        assertEquals("--a \"\": must not be empty", assertThrows(IllegalArgumentException.class,
                () -> AgentFlags.parse(List.of("--a="), valued)).getMessage());
        assertEquals("--a is given twice", assertThrows(IllegalArgumentException.class,
                () -> AgentFlags.parse(List.of("--a", "1", "--a=2"), valued)).getMessage());
    }
}
