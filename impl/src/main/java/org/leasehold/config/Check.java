package org.leasehold.config;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;

/**
 * The checks the settings classes share. Each returns the value it checked, or throws an
 * {@link IllegalArgumentException} whose message names the setting, says what its value is, and what to use instead:
 * {@code <setting> is <value>; <what is accepted and what to do>}.
 *
 * <p>{@code setting} is the name the user wrote the value under: a record component ({@code maxLeaseDuration}), a
 * resource adapter property ({@code MaxLeaseMillis}) or a command-line option ({@code --max-waiters}).
 */
public final class Check {
    private Check() {
    }

    /** A duration above zero. */
    public static Duration positive(String setting, Duration value) {
        if (value == null || value.isZero() || value.isNegative()) {
            throw invalid(setting, value, "it must be a positive duration");
        }
        return value;
    }

    /** A duration of zero or more. */
    public static Duration notNegative(String setting, Duration value) {
        if (value == null || value.isNegative()) {
            throw invalid(setting, value, "it must be zero or positive");
        }
        return value;
    }

    /** A positive duration of at most {@code max}; {@code rule} says what to use when it is longer. */
    public static Duration positiveAtMost(String setting, Duration value, Duration max, String rule) {
        positive(setting, value);
        if (value.compareTo(max) > 0) {
            throw invalid(setting, value, rule);
        }
        return value;
    }

    /**
     * A number of at least {@code min}: the message says {@code use at least <min>} ({@code use 0 or more} for 0),
     * followed by {@code more} (the unit, the default, a reason; may be empty).
     */
    public static long atLeast(String setting, long value, long min, String more) {
        if (value < min) {
            throw invalid(setting, value, (min == 0 ? "use 0 or more" : "use at least " + min) + more);
        }
        return value;
    }

    /** As {@link #atLeast(String, long, long, String)}, for an int. */
    public static int atLeast(String setting, int value, int min, String more) {
        atLeast(setting, (long) value, (long) min, more);
        return value;
    }

    /**
     * A number from {@code min} to {@code max}: the message says {@code use <min> to <max>}, followed by {@code more}
     * (the unit, the default, a reason; may be empty).
     */
    public static int inRange(String setting, int value, int min, int max, String more) {
        if (value < min || value > max) {
            throw invalid(setting, value, "use " + min + " to " + max + more);
        }
        return value;
    }

    /**
     * A number from {@code min} to {@code max} where the range is best said in words ({@code rule}: {@code use 1 KiB
     * to 256 MiB}, {@code use 0 or more, and less than GraceMillis (2000)}).
     */
    public static long within(String setting, long value, long min, long max, String rule) {
        if (value < min || value > max) {
            throw invalid(setting, value, rule);
        }
        return value;
    }

    /** A value that must be given: {@code <setting> is null; <rule>}. */
    public static <T> T present(String setting, T value, String rule) {
        if (value == null) {
            throw invalid(setting, null, rule);
        }
        return value;
    }

    /** Text that must be given (not null, not blank), returned trimmed: {@code <setting> is not set: <rule>}. */
    public static String text(String setting, String value, String rule) {
        if (value == null || value.isBlank()) {
            throw new IllegalArgumentException(setting + " is not set: " + rule);
        }
        return value.trim();
    }

    /** An integer written as text: {@code <setting> '<text>' is not an integer<more>}. */
    public static int integer(String setting, String text, String more) {
        String v = text == null ? "" : text.trim();
        try {
            return Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(setting + " '" + v + "' is not an integer" + more, e);
        }
    }

    /**
     * A duration written as text: {@code 0}, {@code 50us}, {@code 250ms}, {@code 5s}, {@code 2m}, {@code 1h},
     * {@code 1d} or ISO-8601 ({@code PT5S}); not checked for range.
     */
    public static Duration duration(String setting, String text) {
        if (text == null || text.isBlank()) {
            throw new IllegalArgumentException(setting + " is empty; give a duration such as 500ms, 5s, 2m or PT5S");
        }
        String t = text.trim().toLowerCase(Locale.ROOT);
        if (t.equals("0")) {
            return Duration.ZERO;
        }
        try {
            if (t.startsWith("pt") || t.startsWith("p")) {
                return Duration.parse(text.trim());
            }
            if (t.endsWith("ms")) {
                return Duration.ofMillis(Long.parseLong(t.substring(0, t.length() - 2).trim()));
            }
            if (t.endsWith("us")) {
                return Duration.ofNanos(Math.multiplyExact(Long.parseLong(t.substring(0, t.length() - 2).trim()), 1_000L));
            }
            char unit = t.charAt(t.length() - 1);
            long n = Long.parseLong(t.substring(0, t.length() - 1).trim());
            return switch (unit) {
                case 's' -> Duration.ofSeconds(n);
                case 'm' -> Duration.ofMinutes(n);
                case 'h' -> Duration.ofHours(n);
                case 'd' -> Duration.ofDays(n);
                default -> throw new NumberFormatException("unit");
            };
        } catch (NumberFormatException | DateTimeParseException | ArithmeticException e) {
            throw new IllegalArgumentException(setting + " '" + text + "' is not a duration; use 500ms, 5s, 2m, 1h or "
                    + "ISO-8601 such as PT5S", e);
        }
    }

    /**
     * The failure of a check only one settings class makes, in the shared shape: {@code <setting> is <value>;
     * <rule>}. The caller throws it.
     */
    public static IllegalArgumentException invalid(String setting, Object value, String rule) {
        return new IllegalArgumentException(setting + " is " + value + "; " + rule);
    }
}
