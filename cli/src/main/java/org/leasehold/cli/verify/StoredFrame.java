package org.leasehold.cli.verify;

/**
 * One valid frame as {@link LogScanner} read it from a data file or a segment: where it is, its timestamp, its
 * leases (name, generation and the raw witness field each) and how many messages it holds. Payloads are not kept.
 *
 * @param bucket      the bucket's start, µs
 * @param file        the data file, relative to the log's directory
 * @param writer      the data file's writer identity
 * @param seq         the data file's sequence number
 * @param offset      the frame's offset in the data file
 * @param timestamp   the frame's timestamp, µs
 * @param crc         the frame's stored CRC32C (compares a segment's copy with its source)
 * @param length      the frame's length in bytes
 * @param names       the lease names
 * @param generations the generation of each name
 * @param witnesses   the witness field of each name (empty if it carries none)
 * @param messages    how many messages the frame holds
 * @param sealed      whether the bucket was sealed (the frame lies within its lock file's size)
 */
record StoredFrame(long bucket, String file, String writer, int seq, long offset, long timestamp, int crc,
        int length, String[] names, long[] generations, byte[][] witnesses, int messages, boolean sealed) {

    /** The read order of FORMAT.md: timestamp, writer (byte-wise), sequence number, offset. */
    static int compare(StoredFrame a, StoredFrame b) {
        int c = Long.compare(a.timestamp, b.timestamp);
        if (c == 0) {
            c = a.writer.compareTo(b.writer);
        }
        if (c == 0) {
            c = Integer.compare(a.seq, b.seq);
        }
        return c != 0 ? c : Long.compare(a.offset, b.offset);
    }
}
