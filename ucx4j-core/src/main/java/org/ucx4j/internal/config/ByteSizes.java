package org.ucx4j.internal.config;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Parses and formats byte sizes the way Dask's {@code parse_bytes} reads them, so that one config
 * file serves Python and Java alike.
 *
 * <p>Decimal units are powers of 1000 ({@code kB}, {@code MB}, {@code GB}, {@code TB},
 * {@code PB}, and their one-letter forms {@code k}, {@code m}, {@code g}, {@code t}, {@code p}:
 * note that {@code 1g} is 10^9 bytes here, unlike the JVM's {@code -Xmx1g}); IEC units are powers of
 * 1024 ({@code KiB}, {@code MiB}, {@code GiB}, {@code TiB}, {@code PiB}, also written {@code Ki},
 * {@code Mi}, ...). Units are case-insensitive, spaces are ignored, a fraction is allowed
 * ({@code 1.5 GB}, {@code 1000.00 MB}) and fractions of a byte are dropped, as Dask does. A number
 * without a unit is a count of bytes and must then be whole.
 *
 * <p>Threading: stateless, safe everywhere.
 */
public final class ByteSizes {
    private static final Pattern SIZE = Pattern.compile("([+-]?(?:\\d+(?:\\.\\d*)?|\\.\\d+)(?:e[+-]?\\d+)?)([a-z]*)");
    private static final long KIB = 1L << 10;
    private static final Map<String, Long> UNITS = Map.ofEntries(
            Map.entry("", 1L), Map.entry("b", 1L),
            Map.entry("k", 1_000L), Map.entry("kb", 1_000L),
            Map.entry("m", 1_000_000L), Map.entry("mb", 1_000_000L),
            Map.entry("g", 1_000_000_000L), Map.entry("gb", 1_000_000_000L),
            Map.entry("t", 1_000_000_000_000L), Map.entry("tb", 1_000_000_000_000L),
            Map.entry("p", 1_000_000_000_000_000L), Map.entry("pb", 1_000_000_000_000_000L),
            Map.entry("ki", KIB), Map.entry("kib", KIB),
            Map.entry("mi", KIB << 10), Map.entry("mib", KIB << 10),
            Map.entry("gi", KIB << 20), Map.entry("gib", KIB << 20),
            Map.entry("ti", KIB << 30), Map.entry("tib", KIB << 30),
            Map.entry("pi", KIB << 40), Map.entry("pib", KIB << 40));

    private ByteSizes() {
    }

    /**
     * Parses a size.
     *
     * @param text for example {@code 1GB}, {@code 512MiB}, {@code 1.5 GB}, {@code 1g}, {@code 4096}
     * @return the size in bytes, never negative
     * @throws IllegalArgumentException with a reason (no key or source: the caller adds those)
     */
    public static long parse(String text) {
        String norm = text.replace(" ", "").replace("_", "").toLowerCase(Locale.ROOT);
        Matcher m = SIZE.matcher(norm);
        if (!m.matches()) {
            throw new IllegalArgumentException("expected a size such as 1GB, 512MiB, 1.5 GB or a number of bytes");
        }
        Long unit = UNITS.get(m.group(2));
        if (unit == null) {
            throw new IllegalArgumentException("unknown size unit '" + m.group(2)
                    + "': use B, kB, MB, GB, TB, PB (powers of 1000) or KiB, MiB, GiB, TiB, PiB (powers of 1024)");
        }
        BigDecimal number = new BigDecimal(m.group(1));
        if (number.signum() < 0) {
            throw new IllegalArgumentException("a size cannot be negative");
        }
        if (unit == 1L && m.group(2).isEmpty() && number.stripTrailingZeros().scale() > 0) {
            throw new IllegalArgumentException("a size without a unit is a number of bytes and must be whole");
        }
        BigInteger bytes = number.multiply(BigDecimal.valueOf(unit)).toBigInteger();
        if (bytes.bitLength() > 63) {
            throw new IllegalArgumentException("size is too large (the limit is " + Long.MAX_VALUE + " bytes)");
        }
        return bytes.longValueExact();
    }

    /**
     * Formats a size for people: the largest unit that divides it exactly, then the byte count.
     *
     * @param bytes a size in bytes
     * @return for example {@code 1 GB (1000000000 bytes)}, {@code 64 GiB (68719476736 bytes)} or
     *     {@code 1234 bytes}
     */
    public static String format(long bytes) {
        String[] binary = {"PiB", "TiB", "GiB", "MiB", "KiB"};
        String[] decimal = {"PB", "TB", "GB", "MB", "kB"};
        for (int i = 0; i < binary.length; i++) {
            long b = UNITS.get(binary[i].toLowerCase(Locale.ROOT));
            long d = UNITS.get(decimal[i].toLowerCase(Locale.ROOT));
            if (bytes != 0 && bytes % b == 0) {
                return (bytes / b) + " " + binary[i] + " (" + bytes + " bytes)";
            }
            if (bytes != 0 && bytes % d == 0) {
                return (bytes / d) + " " + decimal[i] + " (" + bytes + " bytes)";
            }
        }
        return bytes + " bytes";
    }
}
