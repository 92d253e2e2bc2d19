package org.leasehold.lease;

import java.util.HexFormat;

/**
 * A 128-bit, partly random identifier of one grant: the high half is random per lease service
 * instance, the low half counts grants. Witnesses and lease metadata link each grant to its
 * predecessor's id, so an auditor can follow a name's chain of holders.
 */
public record CorrelationId(long high, long low) {

    /** The id of "no grant", used as the predecessor of a name's first holder. */
    public static final CorrelationId NONE = new CorrelationId(0L, 0L);

    /** Parses the 32 hexadecimal digits {@link #toString()} produces. */
    public static CorrelationId parse(String text) {
        if (text == null || text.length() != 32) {
            throw new IllegalArgumentException("a correlation id is 32 hexadecimal digits, got: " + text);
        }
        HexFormat hex = HexFormat.of();
        try {
            return new CorrelationId(hex.fromHexDigitsToLong(text, 0, 16), hex.fromHexDigitsToLong(text, 16, 32));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("a correlation id is 32 hexadecimal digits, got: " + text, e);
        }
    }

    @Override
    public String toString() {
        HexFormat hex = HexFormat.of();
        return hex.toHexDigits(high) + hex.toHexDigits(low);
    }
}
