package io.qgpu.core.publicapi;

import io.qgpu.core.ledger.Ledger;
import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.GenericArrayType;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.lang.reflect.TypeVariable;
import java.lang.reflect.WildcardType;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.BiConsumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * qgpu-core's exported API as its tests read it: the packages {@code module-info.java} exports, the types
 * of those packages a user can see, and every type their public signatures name. Runs from the module's
 * directory, as Maven runs tests.
 */
final class ExportedApi {

    private static final Pattern EXPORTS = Pattern.compile("^\\s*exports\\s+([\\w.]+)\\s*;", Pattern.MULTILINE);

    private ExportedApi() {
    }

    /** The packages {@code module-info.java} exports to every module. */
    static Set<String> exportedPackages() throws IOException {
        String info = Files.readString(Path.of("src/main/java/module-info.java"));
        Set<String> out = new TreeSet<>();
        Matcher m = EXPORTS.matcher(info);
        while (m.find()) {
            out.add(m.group(1));
        }
        return out;
    }

    /** The folder of qgpu-core's compiled main classes. */
    static Path classes() throws URISyntaxException {
        return Path.of(Ledger.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    }

    /** The types of the exported packages a user can see, by name. */
    static List<Class<?>> visibleTypes(Set<String> exported) throws IOException, URISyntaxException, ClassNotFoundException {
        List<Class<?>> out = new ArrayList<>();
        for (String pkg : exported) {
            Path dir = classes().resolve(pkg.replace('.', '/'));
            List<Path> files;
            try (Stream<Path> s = Files.list(dir)) {
                files = s.filter(f -> f.toString().endsWith(".class")).sorted().toList();
            }
            for (Path f : files) {
                String name = pkg + "." + f.getFileName().toString().replace(".class", "");
                Class<?> c = Class.forName(name, false, Ledger.class.getClassLoader());
                if (visible(c)) {
                    out.add(c);
                }
            }
        }
        return out;
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

    /**
     * Every type a user of {@code c} meets: its supertypes, and what its public (or, when it can be extended,
     * protected) methods, constructors and fields take, return, throw or are, generic arguments, wildcard and
     * type-variable bounds and array components included. {@code named} gets where (for example
     * {@code io.qgpu.core.ledger.Ledger.feed() returns}) and the class named there.
     */
    static void signatureTypes(Class<?> c, BiConsumer<String, Class<?>> named) {
        String where = c.getName();
        boolean extendable = !Modifier.isFinal(c.getModifiers()) && !c.isSealed();
        Set<TypeVariable<?>> seen = new HashSet<>();
        for (TypeVariable<?> v : c.getTypeParameters()) {
            note(where + " has type parameter", v, named, seen);
        }
        if (c.getGenericSuperclass() != null) {
            note(where + " extends", c.getGenericSuperclass(), named, seen);
        }
        for (Type t : c.getGenericInterfaces()) {
            note(where + " implements", t, named, seen);
        }
        for (Method m : c.getDeclaredMethods()) {
            if (m.isSynthetic() || !(Modifier.isPublic(m.getModifiers()) || (extendable && Modifier.isProtected(m.getModifiers())))) {
                continue;
            }
            String at = where + "." + m.getName() + "()";
            note(at + " returns", m.getGenericReturnType(), named, seen);
            for (Type p : m.getGenericParameterTypes()) {
                note(at + " takes", p, named, seen);
            }
            for (Type e : m.getGenericExceptionTypes()) {
                note(at + " throws", e, named, seen);
            }
        }
        for (Constructor<?> k : c.getDeclaredConstructors()) {
            if (k.isSynthetic() || !(Modifier.isPublic(k.getModifiers()) || (extendable && Modifier.isProtected(k.getModifiers())))) {
                continue;
            }
            for (Type p : k.getGenericParameterTypes()) {
                note(where + ".<init> takes", p, named, seen);
            }
            for (Type e : k.getGenericExceptionTypes()) {
                note(where + ".<init> throws", e, named, seen);
            }
        }
        for (Field f : c.getDeclaredFields()) {
            if (f.isSynthetic() || !Modifier.isPublic(f.getModifiers())) {
                continue;
            }
            note(where + "." + f.getName() + " is", f.getGenericType(), named, seen);
        }
    }

    private static void note(String at, Type t, BiConsumer<String, Class<?>> named, Set<TypeVariable<?>> seen) {
        if (t instanceof ParameterizedType p) {
            note(at, p.getRawType(), named, seen);
            for (Type a : p.getActualTypeArguments()) {
                note(at, a, named, seen);
            }
        } else if (t instanceof WildcardType w) {
            for (Type b : w.getUpperBounds()) {
                note(at, b, named, seen);
            }
            for (Type b : w.getLowerBounds()) {
                note(at, b, named, seen);
            }
        } else if (t instanceof TypeVariable<?> v) {
            if (seen.add(v)) {   // T extends Comparable<T> names itself
                for (Type b : v.getBounds()) {
                    note(at, b, named, seen);
                }
            }
        } else if (t instanceof GenericArrayType a) {
            note(at, a.getGenericComponentType(), named, seen);
        } else if (t instanceof Class<?> k) {
            while (k.isArray()) {
                k = k.getComponentType();
            }
            named.accept(at, k);
        }
    }
}
