package org.ucx4j.cli;

import java.util.Collection;
import java.util.Iterator;
import java.util.Map;

/**
 * Writes maps, lists, strings, numbers, booleans and nulls as indented JSON. Anything else is written as
 * its {@code toString()}; non-finite doubles as {@code null}. Enough for the CLI's reports, so that the
 * command needs no JSON library.
 */
final class Json {
    private Json() {}

    /**
     * Renders a value.
     *
     * @param value a tree of {@link Map}s (keys by {@code toString()}), {@link Collection}s and scalars
     * @return JSON text with two-space indentation, no trailing newline
     */
    static String write(Object value) {
        StringBuilder out = new StringBuilder();
        write(value, out, 0);
        return out.toString();
    }

    private static void write(Object value, StringBuilder out, int depth) {
        switch (value) {
            case null -> out.append("null");
            case Boolean b -> out.append(b);
            case Double d -> out.append(Double.isFinite(d) ? d.toString() : "null");
            case Float f -> out.append(Float.isFinite(f) ? f.toString() : "null");
            case Number n -> out.append(n);
            case Map<?, ?> m -> writeMap(m, out, depth);
            case Collection<?> c -> writeList(c, out, depth);
            default -> quote(value.toString(), out);
        }
    }

    private static void writeMap(Map<?, ?> map, StringBuilder out, int depth) {
        if (map.isEmpty()) {
            out.append("{}");
            return;
        }
        out.append('{');
        Iterator<? extends Map.Entry<?, ?>> it = map.entrySet().iterator();
        while (it.hasNext()) {
            Map.Entry<?, ?> e = it.next();
            newline(out, depth + 1);
            quote(String.valueOf(e.getKey()), out);
            out.append(": ");
            write(e.getValue(), out, depth + 1);
            if (it.hasNext()) {
                out.append(',');
            }
        }
        newline(out, depth);
        out.append('}');
    }

    private static void writeList(Collection<?> list, StringBuilder out, int depth) {
        if (list.isEmpty()) {
            out.append("[]");
            return;
        }
        out.append('[');
        Iterator<?> it = list.iterator();
        while (it.hasNext()) {
            newline(out, depth + 1);
            write(it.next(), out, depth + 1);
            if (it.hasNext()) {
                out.append(',');
            }
        }
        newline(out, depth);
        out.append(']');
    }

    private static void newline(StringBuilder out, int depth) {
        out.append('\n').append("  ".repeat(depth));
    }

    private static void quote(String s, StringBuilder out) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }
}
