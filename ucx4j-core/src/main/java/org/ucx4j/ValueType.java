package org.ucx4j;

import java.time.Duration;
import java.util.Locale;
import org.ucx4j.internal.config.Durations;

/**
 * The type of a {@link ConfigKey}: how text is parsed, the checks every value of the type gets, and
 * how a value is shown. Ranges of one key (a minimum, a maximum) are the key's, not the type's.
 *
 * <p>Threading: stateless constants.
 */
enum ValueType {
    /** {@code true}/{@code false} (also yes/no, on/off, 1/0), case-insensitive. */
    BOOLEAN("true or false") {
        @Override
        Object parseText(String text) {
            return switch (text.trim().toLowerCase(Locale.ROOT)) {
                case "true", "yes", "on", "1", "y" -> Boolean.TRUE;
                case "false", "no", "off", "0", "n" -> Boolean.FALSE;
                default -> throw new IllegalArgumentException("expected true or false");
            };
        }
    },
    /** A byte size: {@code 1GB}, {@code 512MiB}, a number of bytes; see {@link ByteSize}. */
    BYTES("a size such as 1GB or 512MiB") {
        @Override
        Object parseText(String text) {
            return ByteSize.parse(text);
        }

        @Override
        Object check(Object value) {
            long bytes = ((Number) value).longValue();
            if (bytes < 0) {
                throw new IllegalArgumentException("a size cannot be negative");
            }
            return bytes;
        }

        @Override
        String displayValue(Object value) {
            return ByteSize.format((Long) value);
        }
    },
    /** A duration: {@code 5s}, {@code 250ms}, a number of seconds; see {@link Durations}. */
    DURATION("a duration such as 5s or 250ms") {
        @Override
        Object parseText(String text) {
            return Durations.parse(text);
        }

        @Override
        Object check(Object value) {
            if (((Duration) value).isNegative()) {
                throw new IllegalArgumentException("a duration cannot be negative");
            }
            return value;
        }

        @Override
        String displayValue(Object value) {
            return Durations.format((Duration) value);
        }

        @Override
        Object toJson(Object value) {
            return value == null ? null : Durations.format((Duration) value);
        }
    },
    /** A positive whole number that fits an {@code int}. */
    POSITIVE_INT("a whole number of at least 1") {
        @Override
        Object parseText(String text) {
            try {
                return Integer.parseInt(text.trim().replace("_", ""));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(
                        "expected a whole number of at least 1 (at most " + Integer.MAX_VALUE + ")");
            }
        }

        @Override
        Object check(Object value) {
            int n = ((Number) value).intValue();
            if (n < 1) {
                throw new IllegalArgumentException("must be at least 1");
            }
            return n;
        }
    },
    /** Free text. */
    STRING("text") {
        @Override
        Object parseText(String text) {
            if (text.isBlank()) {
                throw new IllegalArgumentException("must not be blank (use none to unset)");
            }
            return text;
        }
    },
    /** A progress mode name; see {@link ProgressMode#parse(String)}. */
    PROGRESS_MODE("thread-blocking, thread-polling or caller") {
        @Override
        Object parseText(String text) {
            return ProgressMode.parse(text);
        }

        @Override
        String displayValue(Object value) {
            return ((ProgressMode) value).configName();
        }

        @Override
        Object toJson(Object value) {
            return value == null ? null : ((ProgressMode) value).configName();
        }
    };

    private final String expected;

    ValueType(String expected) {
        this.expected = expected;
    }

    /**
     * What a valid value looks like, for error messages.
     *
     * @return for example {@code true or false}
     */
    String expected() {
        return expected;
    }

    /**
     * Turns a raw value (text from a file, variable or property, or a typed value from the builder)
     * into a checked value of this type.
     *
     * @param raw text or a Java value, never null
     * @param javaType the Java type the key holds, to check builder values
     * @return the value
     * @throws IllegalArgumentException with a reason when it is not valid
     */
    Object convert(Object raw, Class<?> javaType) {
        Object value;
        if (raw instanceof String text) {
            value = parseText(text);
        } else if (javaType.isInstance(raw)) {
            value = raw;
        } else if (javaType == Long.class && (raw instanceof Integer || raw instanceof Short)) {
            value = ((Number) raw).longValue();
        } else {
            throw new IllegalArgumentException(
                    "expected " + expected + ", got a " + raw.getClass().getSimpleName());
        }
        return check(value);
    }

    abstract Object parseText(String text);

    Object check(Object value) {
        return value;
    }

    /**
     * Shows a value to people.
     *
     * @param value a checked value of this type, or null
     * @return the display text; {@code none} for null
     */
    String display(Object value) {
        return value == null ? "none" : displayValue(value);
    }

    String displayValue(Object value) {
        return String.valueOf(value);
    }

    /**
     * A JSON-friendly form: booleans, numbers and strings stay, durations and enums become text.
     *
     * @param value a checked value, or null
     * @return the JSON-friendly value
     */
    Object toJson(Object value) {
        return value;
    }
}
