package org.ucx4j.internal.config;

import java.util.Locale;

/**
 * The literal that means "unset" in environment variables and system properties, as in Dask:
 * {@code none} (and {@code null}, and an empty value), case-insensitive.
 *
 * <p>Threading: stateless, safe everywhere.
 */
public final class LiteralValues {
    private LiteralValues() {}

    /**
     * Maps the none literal to null and leaves any other text alone; {@code true} and {@code false}
     * are parsed later, by the key's type.
     *
     * @param text a value as written
     * @return null for none, else the text
     */
    public static String noneToNull(String text) {
        if (text == null) {
            return null;
        }
        String norm = text.trim().toLowerCase(Locale.ROOT);
        return norm.isEmpty() || norm.equals("none") || norm.equals("null") ? null : text;
    }
}
