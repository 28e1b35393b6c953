package io.qgpu.kubernetes.node.mps;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Reads an MPS control daemon DaemonSet file ({@code deploy/mps-control-daemon.yaml} of either agent) as text, for
 * what a YAML parser drops: the comment that explains a setting. Public (in the node module's test jar) for the
 * agents' {@code DeployFilesTest}s, which parse the same file as Kubernetes objects.
 */
public final class MpsDeployFile {
    private final List<String> lines;

    private MpsDeployFile(List<String> lines) {
        this.lines = lines;
    }

    /** The file's lines. */
    public static MpsDeployFile read(Path yaml) throws IOException {
        return new MpsDeployFile(Files.readAllLines(yaml));
    }

    /**
     * The comment right above the first line that starts (after its indentation) with {@code setting}: the comment
     * lines directly above it, without their {@code #}, joined by spaces; empty when the line above is no comment.
     *
     * @throws AssertionError when no line starts with {@code setting}
     */
    public String commentAbove(String setting) {
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).strip().startsWith(setting)) {
                List<String> comment = new ArrayList<>();
                for (int j = i - 1; j >= 0 && lines.get(j).strip().startsWith("#"); j--) {
                    comment.add(lines.get(j).strip().substring(1).strip());
                }
                Collections.reverse(comment);
                return String.join(" ", comment);
            }
        }
        throw new AssertionError("no line starts with " + setting);
    }
}
