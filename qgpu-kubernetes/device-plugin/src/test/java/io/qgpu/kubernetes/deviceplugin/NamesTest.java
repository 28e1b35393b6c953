package io.qgpu.kubernetes.deviceplugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The names the plugin repeats from the scheduler extender still equal the extender's: read from the
 * extender's source (the plugin does not depend on the extender's module).
 */
class NamesTest {

    @Test
    void sharedNamesEqualTheExtenders() throws Exception {
        Path src = Path.of(System.getProperty("qgpu.extender.sources"), "io/qgpu/kubernetes/extender/QgpuAnnotations.java");
        String text = Files.readString(src);
        Map<String, String> mine = Map.of("GPU", Names.RESOURCE, "PLACEMENT", Names.PLACEMENT, "NODE", Names.NODE);
        for (Map.Entry<String, String> e : mine.entrySet()) {
            Matcher m = Pattern.compile("static final String " + e.getKey() + " = \"([^\"]*)\";").matcher(text);
            assertTrue(m.find(), src + " has no constant " + e.getKey());
            assertEquals(m.group(1), e.getValue(), e.getKey());
        }
        Matcher prefix = Pattern.compile("static final String PREFIX = \"([^\"]*)\";").matcher(text);
        assertTrue(prefix.find());
        assertTrue(!Names.ALLOCATED.startsWith(prefix.group(1)),
                "the plugin's own annotation must stay outside the extender's prefix, which it refuses unknown keys of");
    }
}
