package io.qgpu.core.publicapi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.core.ledger.Ledger;
import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.lang.reflect.WildcardType;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The exported API of qgpu-core names no type of a package the module does not export: no public or
 * protected member of a public type in an exported package takes, returns or is of such a type,
 * and no such type is a public supertype. A type a user cannot see (or that a later release may
 * change freely) must not appear in what the user calls. The exported packages are read from
 * {@code module-info.java}, so a package exported later is checked without editing this test.
 *
 * <p>Shown to catch a leak: with {@code public NodeFeed feed()} put back on {@code Ledger} (the feed
 * now in the non-exported {@code io.qgpu.core.internal}), it failed with
 * {@code io.qgpu.core.ledger.Ledger.feed() returns io.qgpu.core.internal.NodeFeed}.
 */
class ExportedApiLeakTest {

    private static final Pattern EXPORTS = Pattern.compile("^\\s*exports\\s+([\\w.]+)\\s*;", Pattern.MULTILINE);

    private static Set<String> exportedPackages() throws IOException {
        String info = Files.readString(Path.of("src/main/java/module-info.java"));
        Set<String> out = new TreeSet<>();
        Matcher m = EXPORTS.matcher(info);
        while (m.find()) {
            out.add(m.group(1));
        }
        return out;
    }

    private static Path classes() throws URISyntaxException {
        return Path.of(Ledger.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    }

    @Test
    void noPublicMemberOfAnExportedTypeNamesATypeOfAPackageThatIsNotExported() throws Exception {
        Set<String> exported = exportedPackages();
        assertTrue(exported.contains("io.qgpu.core.ledger"), "exports read: " + exported);
        List<String> leaks = new ArrayList<>();
        int checked = 0;
        for (String pkg : exported) {
            Path dir = classes().resolve(pkg.replace('.', '/'));
            List<Path> files;
            try (Stream<Path> s = Files.list(dir)) {
                files = s.filter(f -> f.toString().endsWith(".class")).sorted().toList();
            }
            for (Path f : files) {
                String name = pkg + "." + f.getFileName().toString().replace(".class", "");
                Class<?> c = Class.forName(name, false, Ledger.class.getClassLoader());
                if (!visible(c)) {
                    continue;
                }
                checked++;
                check(c, exported, leaks);
            }
        }
        assertTrue(checked > 50, "exported types checked: " + checked);
        assertEquals(List.of(), leaks);
    }

    /** A public type whose enclosing types are public (nested in an exported type), or protected nested. */
    private static boolean visible(Class<?> c) {
        for (Class<?> k = c; k != null; k = k.getDeclaringClass()) {
            int m = k.getModifiers();
            if (!Modifier.isPublic(m) && !Modifier.isProtected(m)) {
                return false;
            }
        }
        return !c.isSynthetic() && !c.isAnonymousClass() && !c.isLocalClass();
    }

    private static void check(Class<?> c, Set<String> exported, List<String> leaks) {
        String where = c.getName();
        boolean extendable = !Modifier.isFinal(c.getModifiers()) && !c.isSealed();
        if (c.getGenericSuperclass() != null) {
            note(where + " extends", c.getGenericSuperclass(), exported, leaks);
        }
        for (Type t : c.getGenericInterfaces()) {
            note(where + " implements", t, exported, leaks);
        }
        for (Method m : c.getDeclaredMethods()) {
            if (m.isSynthetic() || !(Modifier.isPublic(m.getModifiers()) || (extendable && Modifier.isProtected(m.getModifiers())))) {
                continue;
            }
            String at = where + "." + m.getName() + "()";
            note(at + " returns", m.getGenericReturnType(), exported, leaks);
            for (Type p : m.getGenericParameterTypes()) {
                note(at + " takes", p, exported, leaks);
            }
            for (Type e : m.getGenericExceptionTypes()) {
                note(at + " throws", e, exported, leaks);
            }
        }
        for (Constructor<?> k : c.getDeclaredConstructors()) {
            if (k.isSynthetic() || !(Modifier.isPublic(k.getModifiers()) || (extendable && Modifier.isProtected(k.getModifiers())))) {
                continue;
            }
            for (Type p : k.getGenericParameterTypes()) {
                note(where + ".<init> takes", p, exported, leaks);
            }
        }
        for (Field f : c.getDeclaredFields()) {
            if (f.isSynthetic() || !Modifier.isPublic(f.getModifiers())) {
                continue;
            }
            note(where + "." + f.getName() + " is", f.getGenericType(), exported, leaks);
        }
    }

    private static void note(String at, Type t, Set<String> exported, List<String> leaks) {
        if (t instanceof ParameterizedType p) {
            note(at, p.getRawType(), exported, leaks);
            for (Type a : p.getActualTypeArguments()) {
                note(at, a, exported, leaks);
            }
        } else if (t instanceof WildcardType w) {
            for (Type b : w.getUpperBounds()) {
                note(at, b, exported, leaks);
            }
            for (Type b : w.getLowerBounds()) {
                note(at, b, exported, leaks);
            }
        } else if (t instanceof Class<?> k) {
            while (k.isArray()) {
                k = k.getComponentType();
            }
            String pkg = k.getPackageName();
            if (pkg.startsWith("io.qgpu.core") && !exported.contains(pkg)) {
                leaks.add(at + " " + k.getName());
            }
        }
    }
}
