package org.leasehold.store;

/**
 * The names the store puts on disk: log names, writer identities, data files and the sealing files. Everything the
 * store writes is ASCII letters, digits, {@code -}, {@code _} and {@code .}, so names are the same on every file
 * system and never mistaken for a path.
 */
public final class Names {
    /** The longest log name, in characters. */
    public static final int MAX_LOG_NAME = 100;
    /** The longest writer identity, in characters. */
    public static final int MAX_WRITER_ID = 100;

    /** Declares that sealing of a bucket began. */
    public static final String PRELOCK = "prelock";
    /** The lock file of a sealed bucket. */
    public static final String LOCK = "lock";
    /** Prefix of prepared lock files (linked to {@link #LOCK}; left in place, since the store never deletes). */
    public static final String LOCK_PREPARED_PREFIX = "lock.";
    /** The log descriptor. */
    public static final String DESCRIPTOR = "descriptor";
    /** Prefix of prepared descriptors. */
    public static final String DESCRIPTOR_PREPARED_PREFIX = "descriptor.";
    /** Suffix of data files: {@code <writer>.<sequence>.data}. */
    public static final String DATA_SUFFIX = ".data";

    private Names() {
    }

    /** Why {@code log} is not an acceptable log name, or null if it is. */
    public static String logNameProblem(String log) {
        if (log == null || log.isEmpty()) {
            return "is empty: give a name such as 'orders'";
        }
        if (log.length() > MAX_LOG_NAME) {
            return "is " + log.length() + " characters long; the limit is " + MAX_LOG_NAME;
        }
        if (!isAlnum(log.charAt(0))) {
            return "must start with an ASCII letter or digit";
        }
        for (int i = 0; i < log.length(); i++) {
            char c = log.charAt(i);
            if (!isAlnum(c) && c != '-' && c != '_' && c != '.') {
                return String.format("has the character U+%04X at index %d; use ASCII letters, digits, '-', '_' and "
                        + "'.' only (a log name is a directory name, so no '/')", (int) c, i);
            }
        }
        return null;
    }

    /** Why {@code id} is not an acceptable writer identity, or null if it is. */
    public static String writerIdProblem(String id) {
        if (id == null || id.isEmpty()) {
            return "is empty";
        }
        if (id.length() > MAX_WRITER_ID) {
            return "is " + id.length() + " characters long; the limit is " + MAX_WRITER_ID;
        }
        if (!isAlnum(id.charAt(0))) {
            return "must start with an ASCII letter or digit";
        }
        for (int i = 0; i < id.length(); i++) {
            char c = id.charAt(i);
            if (!isAlnum(c) && c != '-' && c != '_') {
                return String.format("has the character U+%04X at index %d; use ASCII letters, digits, '-' and '_' only",
                        (int) c, i);
            }
        }
        return null;
    }

    /** A host name reduced to letters, digits and single '-', at most 60 characters. */
    public static String sanitizeHost(String host) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < host.length() && sb.length() < 60; i++) {
            char c = host.charAt(i);
            if (isAlnum(c)) {
                sb.append(c);
            } else if (sb.length() > 0 && sb.charAt(sb.length() - 1) != '-') {
                sb.append('-');
            }
        }
        while (sb.length() > 0 && sb.charAt(sb.length() - 1) == '-') {
            sb.setLength(sb.length() - 1);
        }
        return sb.toString();
    }

    /** The name of a writer's {@code sequence}-th data file in a bucket. */
    public static String dataFile(String writerId, int sequence) {
        return writerId + "." + sequence + DATA_SUFFIX;
    }

    /** True if {@code name} is a data file name. */
    public static boolean isDataFile(String name) {
        return parseDataFile(name) != null;
    }

    /** The writer and sequence of a data file name, or null if it is not one. */
    public static DataFileName parseDataFile(String name) {
        if (!name.endsWith(DATA_SUFFIX)) {
            return null;
        }
        int end = name.length() - DATA_SUFFIX.length();
        int dot = name.lastIndexOf('.', end - 1);
        if (dot <= 0 || dot == end - 1) {
            return null;
        }
        String writer = name.substring(0, dot);
        if (writerIdProblem(writer) != null) {
            return null;
        }
        int seq = 0;
        for (int i = dot + 1; i < end; i++) {
            char c = name.charAt(i);
            if (c < '0' || c > '9' || seq > 100_000_000) {
                return null;
            }
            seq = seq * 10 + (c - '0');
        }
        if (end - dot - 1 > 1 && name.charAt(dot + 1) == '0') {
            return null;
        }
        return new DataFileName(name, writer, seq);
    }

    /**
     * A parsed data file name.
     *
     * @param name     the file name
     * @param writer   the writer identity
     * @param sequence the writer's file number in the bucket (0 first; a new one after a write failure or restart)
     */
    public record DataFileName(String name, String writer, int sequence) implements Comparable<DataFileName> {
        /** Orders by writer, then sequence: the order of equal timestamps. */
        @Override
        public int compareTo(DataFileName o) {
            int c = writer.compareTo(o.writer);
            return c != 0 ? c : Integer.compare(sequence, o.sequence);
        }
    }

    private static boolean isAlnum(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    }
}
