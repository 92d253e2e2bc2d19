package org.leasehold.store.format;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * The small text files of the store (lock file, log descriptor): ASCII lines ending in LF, the last line
 * {@code crc32c <8 lowercase hex digits>}, the CRC32C of every byte before that line.
 */
final class TextRecord {
    private static final String CRC_PREFIX = "crc32c ";

    private TextRecord() {
    }

    /** The lines, joined with LF, followed by the checksum line. */
    static byte[] seal(List<String> lines) {
        StringBuilder sb = new StringBuilder();
        for (String l : lines) {
            sb.append(l).append('\n');
        }
        byte[] body = sb.toString().getBytes(StandardCharsets.US_ASCII);
        CRC32C crc = new CRC32C();
        crc.update(body);
        String tail = CRC_PREFIX + String.format("%08x", crc.getValue()) + "\n";
        byte[] t = tail.getBytes(StandardCharsets.US_ASCII);
        byte[] all = new byte[body.length + t.length];
        System.arraycopy(body, 0, all, 0, body.length);
        System.arraycopy(t, 0, all, body.length, t.length);
        return all;
    }

    /** The lines before the checksum line, after checking the checksum; {@code what} names the file for messages. */
    static List<String> open(byte[] bytes, String what) throws FormatException {
        if (bytes.length == 0 || bytes[bytes.length - 1] != '\n') {
            throw new FormatException(0, what + " is empty or does not end with a newline (incomplete)");
        }
        int lastStart = bytes.length - 1;
        while (lastStart > 0 && bytes[lastStart - 1] != '\n') {
            lastStart--;
        }
        String last = new String(bytes, lastStart, bytes.length - 1 - lastStart, StandardCharsets.US_ASCII);
        if (!last.startsWith(CRC_PREFIX) || last.length() != CRC_PREFIX.length() + 8) {
            throw new FormatException(lastStart, what + " does not end with a 'crc32c <8 hex digits>' line");
        }
        long expected;
        try {
            expected = Long.parseLong(last.substring(CRC_PREFIX.length()), 16);
        } catch (NumberFormatException e) {
            throw new FormatException(lastStart, what + " has a malformed checksum line '" + last + "'");
        }
        CRC32C crc = new CRC32C();
        crc.update(bytes, 0, lastStart);
        if (crc.getValue() != expected) {
            throw new FormatException(0, String.format("%s fails its checksum (stored %08x, computed %08x)", what,
                    expected, crc.getValue()));
        }
        for (int i = 0; i < lastStart; i++) {
            if (bytes[i] < 0) {
                throw new FormatException(i, what + " has a non-ASCII byte at offset " + i);
            }
        }
        String text = new String(bytes, 0, lastStart, StandardCharsets.US_ASCII);
        List<String> lines = new ArrayList<>();
        int from = 0;
        while (from < text.length()) {
            int nl = text.indexOf('\n', from);
            lines.add(text.substring(from, nl));
            from = nl + 1;
        }
        return lines;
    }

    /** The value of a {@code key value} line, or throws. */
    static String field(List<String> lines, int index, String key, String what) throws FormatException {
        if (index >= lines.size()) {
            throw new FormatException(0, what + " ends before its '" + key + "' line");
        }
        String l = lines.get(index);
        if (!l.startsWith(key + " ")) {
            throw new FormatException(0, what + " line " + (index + 1) + " should start with '" + key + " ': '" + l + "'");
        }
        return l.substring(key.length() + 1);
    }

    static long number(String s, String key, String what) throws FormatException {
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException e) {
            throw new FormatException(0, what + " has a malformed number for '" + key + "': '" + s + "'");
        }
    }
}
