package org.leasehold.wire;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;


/** Durations as the client's properties and the server's command line write them. */
public final class DurationText {
    private DurationText() {
    }

    /** Parses {@code 0}, {@code 50us}, {@code 250ms}, {@code 5s}, {@code 2m}, {@code 1h} or ISO-8601 ({@code PT5S}). */
    public static Duration parse(String what, String text) {
        if (text == null || text.isBlank()) {
            throw new IllegalArgumentException(what + " is empty; give a duration such as 500ms, 5s, 2m or PT5S");
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
            throw new IllegalArgumentException(what + " '" + text + "' is not a duration; use 500ms, 5s, 2m, 1h or "
                    + "ISO-8601 such as PT5S", e);
        }
    }
}
