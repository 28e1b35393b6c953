package io.qgpu.cli;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;

/** The scenario reader as a plain function of a path, for tests. */
final class ScenarioFiles {
    private ScenarioFiles() {
    }

    static void read(Path file) {
        try {
            ScenarioReader.read(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
