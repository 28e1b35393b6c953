package io.qgpu.kubernetes.extender;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The node name table against a {@link HashMap} on seeded names: names with equal hash codes ("Aa"
 * and "BB" hash alike, and so does every string built of them), non-ASCII and non-BMP characters,
 * names that are prefixes of others; lookups by string and by characters at an offset agree with the
 * map, for names held and names not held.
 */
class NodeNameTableTest {

    @Test
    void lookupsAgreeWithAHashMapOnSeededNames() {
        Random r = new Random(11L);
        for (int round = 0; round < 50; round++) {
            List<String> names = new ArrayList<>();
            Map<String, Integer> expected = new HashMap<>();
            int n = r.nextInt(200);
            while (names.size() < n) {
                String s = name(r);
                if (!s.isBlank() && !expected.containsKey(s)) {
                    expected.put(s, names.size());
                    names.add(s);
                }
            }
            NodeNameTable t = NodeNameTable.of(names);
            assertEquals(names.size(), t.size());
            for (int probe = 0; probe < 400; probe++) {
                String s = probe % 2 == 0 && !names.isEmpty() ? new String(names.get(r.nextInt(names.size()))) : name(r);
                int want = expected.getOrDefault(s, -1);
                assertEquals(want, t.indexOf(s), s);
                char[] padded = ("<<" + s + ">>").toCharArray();
                assertEquals(want, t.indexOf(padded, 2, s.length()), s);
                if (want >= 0) {
                    assertSame(names.get(want), t.name(want));
                }
            }
        }
    }

    /**
     * A lookup by a name's bytes in a body finds exactly the names whose JSON is their ASCII bytes (the
     * table gives those bytes), at any offset; a name that needs escaping or is not ASCII has no plain
     * bytes and is never found so (the request reader reads such names another way).
     */
    @Test
    void lookupsByPlainBytesAgreeWithLookupsByString() {
        Random r = new Random(12L);
        String[] parts = {"node-", "Aa", "BB", "gpu", "\u00e9", "7", "-", "x", "\"", "\\", "\t", "\u007f", " "};
        for (int round = 0; round < 50; round++) {
            List<String> names = new ArrayList<>();
            int n = r.nextInt(150);
            while (names.size() < n) {
                StringBuilder b = new StringBuilder();
                for (int k = 1 + r.nextInt(4); k > 0; k--) {
                    b.append(parts[r.nextInt(parts.length)]);
                }
                if (!b.toString().isBlank() && !names.contains(b.toString())) {
                    names.add(b.toString());
                }
            }
            NodeNameTable t = NodeNameTable.of(names);
            for (int i = 0; i < names.size(); i++) {
                String name = names.get(i);
                boolean plain = name.chars().allMatch(c -> c >= 0x20 && c < 0x80 && c != '"' && c != '\\');
                byte[] bytes = t.plainAscii(i);
                assertEquals(plain, bytes != null, name);
                if (plain) {
                    assertEquals(name, new String(bytes, java.nio.charset.StandardCharsets.US_ASCII));
                    byte[] body = ("[\"" + name + "\"]").getBytes(java.nio.charset.StandardCharsets.US_ASCII);
                    assertEquals(i, t.indexOfPlain(body, 2, name.length(), name.hashCode()), name);
                    String prefix = name.substring(0, name.length() - 1);   // a name cut short is another name, or none
                    assertEquals(names.indexOf(prefix), t.indexOfPlain(body, 2, prefix.length(), prefix.hashCode()), prefix);
                }
            }
            byte[] other = "zz-not-held".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
            assertEquals(-1, t.indexOfPlain(other, 0, other.length, "zz-not-held".hashCode()));
        }
    }

    @Test
    void namesWithTheSameHashAreKeptApart() {
        List<String> names = List.of("AaAa", "AaBB", "BBAa", "BBBB", "Aa", "BB");
        NodeNameTable t = NodeNameTable.of(names);
        for (int i = 0; i < names.size(); i++) {
            assertEquals(i, t.indexOf(names.get(i)));
            assertEquals(i, t.indexOf(names.get(i).toCharArray(), 0, names.get(i).length()));
        }
        assertEquals(-1, t.indexOf("AaA"));
        assertEquals(-1, t.indexOf("BBBBAa"));
    }

    @Test
    void aRepeatedOrBlankNameIsRefused() {
        IllegalArgumentException twice = assertThrows(IllegalArgumentException.class, () -> NodeNameTable.of(List.of("a", "b", "a")));
        assertTrue(twice.getMessage().contains("node name a occurs twice (positions 0 and 2)"), twice.getMessage());
        IllegalArgumentException blank = assertThrows(IllegalArgumentException.class, () -> NodeNameTable.of(List.of("a", " ")));
        assertTrue(blank.getMessage().contains("position 1 is blank"), blank.getMessage());
        assertEquals(-1, NodeNameTable.EMPTY.indexOf("a"));
        assertEquals(-1, NodeNameTable.EMPTY.indexOf(new char[] {'a'}, 0, 1));
    }

    private static String name(Random r) {
        String[] parts = {"node-", "Aa", "BB", "gpu", "\u00e9", "\u6f22", "\ud83d\ude80", "7", "-", "x"};
        StringBuilder s = new StringBuilder();
        int k = 1 + r.nextInt(4);
        for (int i = 0; i < k; i++) {
            s.append(parts[r.nextInt(parts.length)]);
        }
        return s.toString();
    }
}
