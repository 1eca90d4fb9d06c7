package org.ucx4j.internal.config;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Parses and formats durations: {@code 5s}, {@code 250ms}, {@code 1m}, {@code 2.5s}, a plain
 * number of seconds ({@code 5}, {@code 0.5}), or ISO-8601 ({@code PT5S}).
 *
 * <p>Units: {@code ns}, {@code us}, {@code ms}, {@code s}, {@code m} or {@code min}, {@code h},
 * {@code d}; case-insensitive, spaces ignored. Dask's {@code parse_timedelta} reads the same forms.
 *
 * <p>Threading: stateless, safe everywhere.
 */
public final class Durations {
    private static final Pattern DURATION = Pattern.compile("([+-]?(?:\\d+(?:\\.\\d*)?|\\.\\d+))([a-z]*)");
    private static final Map<String, Long> NANOS_PER_UNIT = Map.ofEntries(
            Map.entry("", 1_000_000_000L),
            Map.entry("ns", 1L),
            Map.entry("us", 1_000L),
            Map.entry("ms", 1_000_000L),
            Map.entry("s", 1_000_000_000L),
            Map.entry("sec", 1_000_000_000L),
            Map.entry("m", 60_000_000_000L),
            Map.entry("min", 60_000_000_000L),
            Map.entry("h", 3_600_000_000_000L),
            Map.entry("d", 86_400_000_000_000L));

    private Durations() {}

    /**
     * Parses a duration.
     *
     * @param text for example {@code 5s}, {@code 250ms}, {@code 2.5s}, {@code 30}
     * @return the duration, never negative
     * @throws IllegalArgumentException with a reason (the caller adds key and source)
     */
    public static Duration parse(String text) {
        String norm = text.replace(" ", "").toLowerCase(Locale.ROOT);
        Duration result;
        if (norm.startsWith("p") || norm.startsWith("-p")) {
            try {
                result = Duration.parse(norm.toUpperCase(Locale.ROOT));
            } catch (DateTimeParseException e) {
                throw new IllegalArgumentException("expected a duration such as 5s, 250ms, 1m or PT5S");
            }
        } else {
            Matcher m = DURATION.matcher(norm);
            if (!m.matches()) {
                throw new IllegalArgumentException(
                        "expected a duration such as 5s, 250ms, 1m, 2.5s or a number of seconds");
            }
            Long nanosPerUnit = NANOS_PER_UNIT.get(m.group(2));
            if (nanosPerUnit == null) {
                throw new IllegalArgumentException(
                        "unknown duration unit '" + m.group(2) + "': use ns, us, ms, s, m, h or d");
            }
            BigDecimal nanos = new BigDecimal(m.group(1))
                    .multiply(BigDecimal.valueOf(nanosPerUnit))
                    .setScale(0, RoundingMode.HALF_UP);
            try {
                result = Duration.ofNanos(nanos.longValueExact());
            } catch (ArithmeticException e) {
                throw new IllegalArgumentException("duration is too long");
            }
        }
        if (result.isNegative()) {
            throw new IllegalArgumentException("a duration cannot be negative");
        }
        return result;
    }

    /**
     * Formats a duration compactly in the largest unit that keeps it exact.
     *
     * @param duration a duration
     * @return for example {@code 5s}, {@code 250ms}, {@code 2m}, {@code 2500us}
     */
    public static String format(Duration duration) {
        long nanos;
        try {
            nanos = duration.toNanos();
        } catch (ArithmeticException e) {
            return duration.toString();
        }
        String[] units = {"d", "h", "m", "s", "ms", "us"};
        for (String unit : units) {
            long per = NANOS_PER_UNIT.get(unit);
            if (nanos != 0 && nanos % per == 0) {
                return (nanos / per) + unit;
            }
        }
        return nanos == 0 ? "0s" : nanos + "ns";
    }
}
