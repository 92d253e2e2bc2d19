package org.leasehold.lease;

import java.util.Arrays;
import java.util.List;

import org.leasehold.lease.InvalidLeaseRequestException.Reason;

/**
 * The rules for lease names, shared by every {@link LeaseService} implementation and its clients.
 *
 * <p>A name is 1 to {@value #MAX_NAME_BYTES} bytes of UTF-8, made of segments separated by {@code /} (for example
 * {@code tenant/42/account/7}). No control characters, no leading or trailing {@code /}, no empty segment, and no
 * {@code .} or {@code ..} segment, so that a name can never be mistaken for a path.
 */
public final class LeaseNames {

    /** The longest name, in UTF-8 bytes. */
    public static final int MAX_NAME_BYTES = 512;

    private LeaseNames() {
    }

    /** Checks one name; throws with a message naming the problem and the fix. */
    public static void check(String name) throws InvalidLeaseRequestException {
        if (name == null || name.isEmpty()) {
            throw new InvalidLeaseRequestException(Reason.EMPTY_NAME,
                    "a lease name is empty" + (name == null ? " (null)" : "")
                            + ": give every name at least one character, for example 'tenant/42'");
        }
        int bytes = 0;
        int segmentStart = 0;
        int length = name.length();
        for (int i = 0; i < length; i++) {
            char c = name.charAt(i);
            if (c < 0x80) {
                bytes++;
                if (c < 0x20 || c == 0x7f) {
                    throw controlCharacter(name, i, c);
                }
                if (c == '/') {
                    checkSegment(name, segmentStart, i);
                    segmentStart = i + 1;
                }
            } else if (c < 0x800) {
                bytes += 2;
                if (c <= 0x9f) {
                    throw controlCharacter(name, i, c);
                }
            } else if (Character.isHighSurrogate(c) && i + 1 < length && Character.isLowSurrogate(name.charAt(i + 1))) {
                bytes += 4;
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new InvalidLeaseRequestException(Reason.NAME_INVALID_UNICODE,
                        "lease name '" + printable(name) + "' has an unpaired surrogate at index " + i
                                + ": names must be valid Unicode text");
            } else {
                bytes += 3;
            }
        }
        checkSegment(name, segmentStart, length);
        if (bytes > MAX_NAME_BYTES) {
            throw new InvalidLeaseRequestException(Reason.NAME_TOO_LONG,
                    "lease name '" + printable(name.substring(0, Math.min(name.length(), 40))) + "...' is " + bytes
                            + " bytes of UTF-8; the limit is " + MAX_NAME_BYTES
                            + ": use a shorter name (a hash of a long key works)");
        }
    }

    /**
     * Checks a request's names and returns them in canonical (sorted) order, the order in which a service takes
     * them, so that two multi-name requests can never deadlock.
     */
    public static String[] canonical(List<String> names, int maxNames) throws InvalidLeaseRequestException {
        int n = names.size();
        if (n == 0) {
            throw new InvalidLeaseRequestException(Reason.NO_NAMES,
                    "the request names no lease: give at least one name");
        }
        if (n > maxNames) {
            throw new InvalidLeaseRequestException(Reason.TOO_MANY_NAMES,
                    "the request names " + n + " leases; the limit per request is " + maxNames
                            + ": split it, or take a coarser name that covers them");
        }
        if (n == 1) {
            String only = names.get(0);
            check(only);
            return new String[] {only};
        }
        String[] sorted = new String[n];
        for (int i = 0; i < n; i++) {
            String name = names.get(i);
            check(name);
            sorted[i] = name;
        }
        Arrays.sort(sorted);
        for (int i = 1; i < n; i++) {
            if (sorted[i].equals(sorted[i - 1])) {
                throw new InvalidLeaseRequestException(Reason.DUPLICATE_NAME,
                        "the request names '" + printable(sorted[i]) + "' more than once: name each lease once");
            }
        }
        return sorted;
    }

    private static void checkSegment(String name, int start, int end) throws InvalidLeaseRequestException {
        int len = end - start;
        if (len == 0) {
            String where = start == 0 ? "starts with '/'" : end == name.length() ? "ends with '/'" : "has an empty segment ('//')";
            throw new InvalidLeaseRequestException(Reason.NAME_HAS_BAD_SEGMENT,
                    "lease name '" + printable(name) + "' " + where
                            + ": names are '/'-separated non-empty segments, like 'tenant/42'");
        }
        if ((len == 1 && name.charAt(start) == '.') || (len == 2 && name.charAt(start) == '.' && name.charAt(start + 1) == '.')) {
            throw new InvalidLeaseRequestException(Reason.NAME_HAS_BAD_SEGMENT,
                    "lease name '" + printable(name) + "' has a '" + name.substring(start, end)
                            + "' segment: names are not paths, so '.' and '..' segments are refused");
        }
    }

    private static InvalidLeaseRequestException controlCharacter(String name, int index, char c) {
        return new InvalidLeaseRequestException(Reason.NAME_HAS_CONTROL_CHARACTER,
                String.format("lease name '%s' has the control character U+%04X at index %d: use printable characters only",
                        printable(name), (int) c, index));
    }

    /** The name with control characters escaped, safe to put in a message or a log line. */
    public static String printable(String name) {
        StringBuilder sb = new StringBuilder(name.length());
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (Character.isISOControl(c) || Character.isSurrogate(c) && !isPairedAt(name, i)) {
                sb.append(String.format("\\u%04X", (int) c));
            } else {
                sb.append(c);
            }
        }
        return sb.toString();
    }

    private static boolean isPairedAt(String s, int i) {
        char c = s.charAt(i);
        if (Character.isHighSurrogate(c)) {
            return i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1));
        }
        return i > 0 && Character.isHighSurrogate(s.charAt(i - 1));
    }
}
