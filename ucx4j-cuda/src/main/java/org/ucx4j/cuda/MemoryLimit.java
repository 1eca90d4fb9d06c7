package org.ucx4j.cuda;

import java.util.Locale;
import org.ucx4j.ByteSize;

/**
 * A memory limit as Dask writes one: a size, a fraction of a total, or "auto".
 *
 * <p>Threading: immutable.
 *
 * @param bytes the limit in bytes, when it is a size (else 0)
 * @param fraction the fraction of the total, when it is one (else 0)
 */
record MemoryLimit(long bytes, double fraction) {
    /** The forms the text may take, for error messages. */
    static final String EXPECTED =
            "a size (5GB, 4GiB, a number of bytes above 1), a fraction of the total (0.8), a percentage (80%) or auto";

    static MemoryLimit ofBytes(long bytes) {
        if (bytes < 1) {
            throw new IllegalArgumentException("a memory limit must be at least 1 byte: " + bytes);
        }
        return new MemoryLimit(bytes, 0);
    }

    static MemoryLimit ofFraction(double fraction) {
        if (!(fraction > 0 && fraction <= 1)) {
            throw new IllegalArgumentException("a memory limit's fraction must be above 0 and at most 1: " + fraction);
        }
        return new MemoryLimit(0, fraction);
    }

    /**
     * Parses a limit: {@code auto} (then {@code auto} is returned), {@code 0.8} or {@code 80%} (a fraction), a
     * plain number above 1 (bytes), or a size with a unit ({@link ByteSize}).
     *
     * @param text the text
     * @param auto what {@code auto} means
     * @return the limit
     * @throws IllegalArgumentException saying what was wrong and what is expected
     */
    static MemoryLimit parse(String text, MemoryLimit auto) {
        String t = text.trim().toLowerCase(Locale.ROOT);
        try {
            if (t.equals("auto")) {
                return auto;
            }
            if (t.endsWith("%")) {
                return ofFraction(
                        Double.parseDouble(t.substring(0, t.length() - 1).trim()) / 100);
            }
            if (t.matches("[0-9]*\\.?[0-9]+(e[+-]?[0-9]+)?")) {
                double v = Double.parseDouble(t);
                if (v <= 1) {
                    return ofFraction(v);
                }
            }
            return ofBytes(ByteSize.parse(t));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "'" + text + "' is not a memory limit (" + e.getMessage() + "); expected " + EXPECTED);
        }
    }

    /**
     * The limit in bytes.
     *
     * @param total what a fraction is of
     * @return bytes, at least 1
     */
    long resolve(long total) {
        return fraction > 0 ? Math.max(1, (long) (total * fraction)) : bytes;
    }

    @Override
    public String toString() {
        return fraction > 0 ? Math.round(fraction * 1000) / 10.0 + "%" : ByteSize.format(bytes);
    }
}
