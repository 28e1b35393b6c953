package io.qgpu.cli;

import io.qgpu.api.InvalidValueException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The one check that no command writes over a file it reads in the same run, and that every file it
 * reads is a file. A command lists the files it reads ({@link #input}) and the files it will write
 * ({@link #output}), then calls {@link #check()} before it writes anything. Files are compared by
 * identity, not by spelling: an output that exists is the same as an input when
 * {@link Files#isSameFile} says so (a relative path, {@code ..}, a symbolic link or a hard link to the
 * input are all caught: on Unix the file key, device and inode, is compared); an output that does not
 * exist yet is compared as its parent folder's real path plus its name against each input's real path.
 *
 * <p>A clash is refused with an {@link InvalidValueException} naming the output's flag, the input's
 * flag and the file, for example
 * {@code --out = "inv.json": is the file --inventory reads (inv.json); qgpu never writes over its own input: give another --out}.
 *
 * <p>Thread safety: not thread-safe; one instance per run.
 */
final class FileRoles {

    /** A file and the flag (or positional name such as {@code SCENARIO.json}) that named it. */
    record Role(String flag, String asWritten, Path path) {
        Role {
            Objects.requireNonNull(flag, "flag");
            Objects.requireNonNull(asWritten, "asWritten");
            Objects.requireNonNull(path, "path");
        }
    }

    private final List<Role> inputs = new ArrayList<>();
    private final List<Role> outputs = new ArrayList<>();

    /** A file the command reads, named by {@code flag}. */
    FileRoles input(String flag, Path path) {
        inputs.add(new Role(flag, path.toString(), path));
        return this;
    }

    /** A file the command writes, named by {@code flag} (as the user wrote it). */
    FileRoles output(String flag, Path path) {
        outputs.add(new Role(flag, path.toString(), path));
        return this;
    }

    /**
     * A file the command writes into the folder {@code dir} given by {@code flag}; the message names the
     * folder as the user wrote it and the file in it.
     */
    FileRoles outputIn(String flag, Path dir, Path file) {
        outputs.add(new Role(flag, dir.toString(), file));
        return this;
    }

    /**
     * Refuses a folder given as an input or where a file is written, and an output that is one of the inputs.
     *
     * @throws InvalidValueException naming both flags and the file
     */
    void check() {
        for (Role in : inputs) {
            if (Files.isDirectory(in.path())) {
                throw new InvalidValueException(in.flag(), OutputNames.shown(in.asWritten()),
                        "is a directory; give a file");
            }
        }
        for (Role out : outputs) {
            Path dir = Path.of(out.asWritten());
            if (!out.asWritten().equals(out.path().toString()) && Files.exists(dir) && !Files.isDirectory(dir)) {
                // --out DIR naming a file: say which, before anything is created or written
                for (Role in : inputs) {
                    if (same(dir, in.path())) {
                        throw new InvalidValueException(out.flag(), OutputNames.shown(out.asWritten()), "is the file " + in.flag()
                                + " reads, not a directory; qgpu never writes over a file it reads: give another " + out.flag());
                    }
                }
                throw new InvalidValueException(out.flag(), OutputNames.shown(out.asWritten()), "is a file, not a directory;"
                        + " give a directory (it is created when missing)");
            }
            String file = out.asWritten().equals(out.path().toString()) ? "" : "its " + out.path().getFileName() + " ";
            if (Files.isDirectory(out.path())) {
                throw new InvalidValueException(out.flag(), OutputNames.shown(out.asWritten()),
                        file + "is a directory; give " + (file.isEmpty() ? "a file name" : "another " + out.flag()));
            }
            for (Role in : inputs) {
                if (same(out.path(), in.path())) {
                    throw new InvalidValueException(out.flag(), OutputNames.shown(out.asWritten()),
                            file + "is the file " + in.flag() + " reads (" + OutputNames.shown(in.asWritten())
                                    + "); qgpu never writes over a file it reads: give another " + out.flag());
                }
            }
        }
    }

    /** Whether writing {@code out} would write the file {@code in}. */
    static boolean same(Path out, Path in) {
        if (!Files.exists(in)) {
            return false;
        }
        try {
            if (Files.exists(out)) {
                return Files.isSameFile(out, in);
            }
            // not there yet: a dangling symbolic link is written through to its target, which is not the input
            // (that exists); otherwise the real folder plus the name
            if (Files.isSymbolicLink(out)) {
                return false;
            }
            Path parent = out.toAbsolutePath().getParent();
            Path name = out.getFileName();
            if (parent == null || name == null || !Files.isDirectory(parent)) {
                return false;
            }
            return parent.toRealPath().resolve(name).equals(in.toRealPath());
        } catch (IOException e) {
            // a file we cannot even look at is not one we can show to be the same; the write itself will say why
            return false;
        }
    }
}
