package io.qgpu.json;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.exc.InvalidFormatException;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import java.util.Collection;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/** Parser and binder errors restated in words, without the implementation's class names or parser internals. */
final class Problems {
    private Problems() {
    }

    /** A syntax error (or a number the parser cannot hold) in words. */
    static String syntax(JsonProcessingException e) {
        String m = e.getOriginalMessage() == null ? "" : e.getOriginalMessage();
        if (m.startsWith("Trailing token")) {
            return "unexpected content after the end of the JSON value";
        }
        if (m.startsWith("Duplicate field")) {
            return "the same key appears twice in one object (" + m.substring("Duplicate field ".length()) + ")";
        }
        if (m.contains("out of range")) {
            return outOfRange(m);
        }
        Matcher x = find("^Unrecognized token '([^']*)'", m);
        if (x != null) {
            return "unexpected text '" + x.group(1) + "': a JSON value is a string in double quotes, a number, an array, an object,"
                    + " true, false or null";
        }
        x = find("^Non-standard token '([^']*)'", m);
        if (x != null) {
            return x.group(1) + " is not a JSON number";
        }
        x = find("^Number value length \\((\\d+)\\) exceeds the maximum allowed \\((\\d+)", m);
        if (x != null) {
            return "a number of " + x.group(1) + " digits; at most " + x.group(2) + " are accepted";
        }
        x = find("^String value length \\((\\d+)\\) exceeds the maximum allowed \\((\\d+)", m);
        if (x != null) {
            return "a string of " + x.group(1) + " characters; at most " + x.group(2) + " are accepted";
        }
        x = find("nesting depth \\((\\d+)\\) exceeds the maximum allowed \\((\\d+)", m);
        if (x != null) {
            return "arrays and objects nested " + x.group(1) + " deep; at most " + x.group(2) + " levels are accepted";
        }
        if (m.startsWith("Unexpected end-of-input")) {
            return "the text ends before the JSON value does (a missing } or ] or closing quote?)";
        }
        if (m.contains("Leading zeroes not allowed") || m.contains("Invalid numeric value: Leading zero")) {
            return "a number may not start with 0 (write 7, not 07)";
        }
        if (m.startsWith("Illegal unquoted character")) {
            return "a string holds a raw control character (a line break or tab?); write it escaped, as \\n or \\t";
        }
        x = find("(?s)^Unexpected character \\('(.)' \\(code \\d+\\)\\): was expecting (.*)$", m);
        if (x != null) {
            String want = x.group(2).replaceAll("\\s+", " ").replace("double-quote to start field name", "a key in double quotes")
                    .replace("comma to separate Object entries", "a comma or }").replace("comma to separate Array entries", "a comma or ]")
                    .replace("a colon to separate field name and value", "a colon after the key");
            int src = want.indexOf(" at [Source");
            return "unexpected '" + x.group(1) + "': expected " + (src >= 0 ? want.substring(0, src) : want).trim();
        }
        return clean(m);
    }

    /** The match of {@code regex} in {@code m}, or null when it does not occur. */
    private static @Nullable Matcher find(String regex, String m) {
        Matcher x = Pattern.compile(regex).matcher(m);
        return x.find() ? x : null;
    }

    /** "out of range of long (-9223372036854775808 - 9223372036854775807)" in words, with the range. */
    static String outOfRange(String m) {
        Matcher r = Pattern.compile("out of range of \\w+ \\((-?\\d+) - (-?\\d+)\\)").matcher(m);
        return r.find() ? "the number is too large: a whole number here is between " + r.group(1) + " and " + r.group(2)
                : "the number is too large";
    }

    /** A binding error (wrong type, fraction for a whole number, ...) in words. */
    static String mapping(JsonMappingException e) {
        String m = e.getOriginalMessage() == null ? "" : e.getOriginalMessage();
        if (m.contains("out of range of")) {
            return outOfRange(m);
        }
        if (m.startsWith("Trailing token")) {
            return "unexpected content after the end of the JSON value";
        }
        if (e instanceof MismatchedInputException mi && mi.getTargetType() != null) {
            Class<?> t = mi.getTargetType();
            boolean fraction = e instanceof InvalidFormatException f && f.getValue() instanceof Number n
                    && (n instanceof Double || n instanceof Float || n instanceof java.math.BigDecimal);
            if (t == Integer.class || t == int.class || t == Long.class || t == long.class || t == Short.class) {
                if (fraction && wholeValue(((InvalidFormatException) e).getValue())) {
                    // 1.6e1, 16.0 or 1e30: a whole value, but written as a floating-point number
                    return "must be a whole number written as digits alone (no decimal point, no exponent)";
                }
                return fraction || m.contains("Floating-point") ? "must be a whole number (a fraction is not accepted)"
                        : "must be a whole number";
            }
            if (t == Double.class || t == double.class || t == Float.class) {
                return "must be a number";
            }
            if (t == Boolean.class || t == boolean.class) {
                return "must be true or false";
            }
            if (t == String.class) {
                return "must be a string";
            }
            if (Collection.class.isAssignableFrom(t) || t.isArray()) {
                return "must be an array";
            }
            if (Map.class.isAssignableFrom(t) || !t.getName().startsWith("java.")) {
                return "must be an object";
            }
        }
        return clean(m);
    }

    /** Whether a floating-point value read where a whole number is meant has no fractional part. */
    private static boolean wholeValue(@Nullable Object value) {
        if (!(value instanceof Number n)) {
            return false;
        }
        try {
            java.math.BigDecimal d = n instanceof java.math.BigDecimal b ? b : new java.math.BigDecimal(n.toString());
            return d.signum() == 0 || d.stripTrailingZeros().scale() <= 0;
        } catch (NumberFormatException ex) {
            return false; // NaN or infinity
        }
    }

    /** Drops class names in back-quotes and anything after a parser's source description. */
    static String clean(String m) {
        String s = m;
        int src = s.indexOf("\n at [Source");
        if (src >= 0) {
            s = s.substring(0, src);
        }
        s = s.replaceAll(";?\\s*enable `[^`]*` to allow", "").replaceAll(",?\\s*from `StreamReadConstraints[^`]*`", "");
        s = s.replaceAll("`[^`]*`", "a value").replaceAll("\\(code \\d+\\)", "").replace("REDACTED", "");
        s = s.replaceAll("\\s+", " ").trim();
        return s.isEmpty() ? "is not valid here" : s;
    }
}
