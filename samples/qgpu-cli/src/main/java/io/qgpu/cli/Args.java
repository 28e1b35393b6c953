package io.qgpu.cli;

import io.qgpu.api.InvalidValueException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Minimal parser: {@code --flag}, {@code --key value} or {@code --key=value}, and positionals. An option
 * that takes a value may be given once: a second one is refused (exit 2) rather than silently winning.
 */
final class Args {
    private final Map<String, String> options = new LinkedHashMap<>();
    private final List<String> positionals = new ArrayList<>();

    private Args() {
    }

    /**
     * @param flags   options that take no value
     * @param valued  options that take a value
     */
    static Args parse(List<String> args, Set<String> flags, Set<String> valued) {
        Args a = new Args();
        for (int i = 0; i < args.size(); i++) {
            String s = args.get(i);
            if (s.startsWith("--")) {
                String key = s;
                String value = null;
                int eq = s.indexOf('=');
                if (eq > 0) {
                    key = s.substring(0, eq);
                    value = s.substring(eq + 1);
                }
                if (flags.contains(key)) {
                    if (value != null) {
                        throw new UsageException(key + " takes no value");
                    }
                    a.options.put(key, "true");
                } else if (valued.contains(key)) {
                    if (value == null) {
                        if (i + 1 >= args.size()) {
                            throw new UsageException(key + " needs a value");
                        }
                        value = args.get(++i);
                    }
                    String before = a.options.get(key);
                    if (before != null) {
                        // the last one silently winning hides a typo; say which two were given
                        throw new InvalidValueException(key, OutputNames.shown(value), "is given twice (first "
                                + OutputNames.shown(before) + "); give " + key + " once");
                    }
                    a.options.put(key, value);
                } else {
                    java.util.TreeSet<String> known = new java.util.TreeSet<>(flags);
                    known.addAll(valued);
                    throw new UsageException("unknown option " + key + "; this command takes " + String.join(", ", known));
                }
            } else {
                a.positionals.add(s);
            }
        }
        return a;
    }

    boolean flag(String name) {
        return options.containsKey(name);
    }

    Optional<String> option(String name) {
        return Optional.ofNullable(options.get(name));
    }

    List<String> positionals() {
        return positionals;
    }

    String positional(int i, String what) {
        if (i >= positionals.size()) {
            throw new UsageException("missing " + what);
        }
        return positionals.get(i);
    }
}
