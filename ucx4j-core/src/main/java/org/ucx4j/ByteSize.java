package org.ucx4j;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The one parser of byte sizes in ucx4j, shared by the configuration ({@code memory-pool.size: 1GB})
 * and the command line ({@code ucx4j bench --size 64Mi}), with one meaning for each unit.
 *
 * <ul>
 *   <li>SI units are powers of <b>ten</b>, as in Dask's {@code parse_bytes}: {@code kB} (also
 *       {@code KB}, {@code k}) = 10^3, {@code MB} ({@code m}) = 10^6, {@code GB} ({@code g}) = 10^9,
 *       {@code TB} ({@code t}) = 10^12, {@code PB} ({@code p}) = 10^15. Note that {@code 1g} is 10^9
 *       bytes here, unlike the JVM's {@code -Xmx1g}.</li>
 *   <li>IEC units are powers of <b>two</b>: {@code Ki}/{@code KiB} = 2^10, {@code Mi}/{@code MiB} = 2^20,
 *       {@code Gi}/{@code GiB} = 2^30, {@code Ti}/{@code TiB} = 2^40, {@code Pi}/{@code PiB} = 2^50.</li>
 *   <li>A plain number is a count of bytes and must be whole; {@code B} means bytes too.</li>
 * </ul>
 * Units are case-insensitive, spaces and {@code _} are ignored, a fraction is allowed with a unit
 * ({@code 1.5 GB}, {@code 1000.00 MB}) and fractions of a byte are dropped, as Dask does. So
 * {@code 64MB} is 64,000,000 bytes and {@code 64Mi} is 67,108,864 bytes.
 *
 * <p>Output units are a different matter: bandwidth printed as "MB/s" by {@code ucx4j bench} is
 * 2^20 bytes per second, as {@code ucx_perftest} prints it.
 *
 * <p>Threading: stateless, safe everywhere.
 */
public final class ByteSize {
    // Exponents of at most two digits: "1e99999999" would make BigDecimal.toBigInteger run for minutes.
    private static final Pattern SIZE =
            Pattern.compile("([+-]?(?:\\d+(?:\\.\\d*)?|\\.\\d+)(?:e[+-]?\\d{1,2})?)([a-z]*)");
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

    private ByteSize() {}

    /**
     * Parses a size.
     *
     * @param text for example {@code 1GB}, {@code 512MiB}, {@code 1.5 GB}, {@code 64Mi}, {@code 4096}
     * @return the size in bytes, never negative
     * @throws IllegalArgumentException with the reason, which names the units (the caller adds where
     *     the text came from)
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
        return bytes == 1 ? "1 byte" : bytes + " bytes";
    }
}
