package org.leasehold.cli;

import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;

import org.leasehold.config.Check;

import picocli.CommandLine;

/**
 * A point in time as given on the command line: an ISO-8601 instant ({@code 2026-11-22T02:43:10Z},
 * {@code 2026-11-22T02:43:10.250Z}, {@code 2026-11-22T03:43:10+01:00}), {@code now}, or a signed offset from now
 * ({@code -10m}, {@code -90s}, {@code -2h}, {@code -1d}, {@code -500ms}, {@code +5s}, or ISO-8601 {@code -PT10M}).
 * An offset is resolved against the run's clock when the command starts.
 *
 * @param text    what was given
 * @param instant the instant, or null for an offset
 * @param offset  the offset from now, or null for an instant
 */
record TimeArg(String text, Instant instant, Duration offset) {

    /** The instant this argument names when the clock reads {@code now}. */
    Instant resolve(Instant now) {
        return instant != null ? instant : now.plus(offset);
    }

    @Override
    public String toString() {
        return text;
    }

    /** Parses a time argument; a bad one is a usage error naming the accepted forms. */
    static TimeArg parse(String text) {
        String t = text.trim();
        if (t.equalsIgnoreCase("now")) {
            return new TimeArg(text, null, Duration.ZERO);
        }
        if (t.startsWith("-") || t.startsWith("+")) {
            try {
                Duration d = Check.duration("offset", t.substring(1));
                return new TimeArg(text, null, t.startsWith("-") ? d.negated() : d);
            } catch (IllegalArgumentException e) {
                throw bad(text);
            }
        }
        try {
            return new TimeArg(text, Instant.parse(t), null);
        } catch (DateTimeParseException e) {
            try {
                return new TimeArg(text, OffsetDateTime.parse(t).toInstant(), null);
            } catch (DateTimeParseException e2) {
                throw bad(text);
            }
        }
    }

    private static CommandLine.TypeConversionException bad(String text) {
        return new CommandLine.TypeConversionException("'" + text + "' is not a time: give an ISO-8601 instant such as "
                + "2026-11-22T02:43:10Z, 'now', or an offset from now such as -10m, -90s, -2h, -1d");
    }

    /** The picocli converter. */
    static final class Converter implements CommandLine.ITypeConverter<TimeArg> {
        @Override
        public TimeArg convert(String value) {
            return parse(value);
        }
    }
}
