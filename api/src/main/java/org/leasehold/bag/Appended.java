package org.leasehold.bag;

import java.time.Instant;

/**
 * The acknowledgement of an append: the frame is written (and flushed, as the store's flush policy says) and will be
 * readable forever. {@link #timestamp()} is what the holder publishes as its watermark when it releases its leases.
 *
 * @param log       the log
 * @param bucket    the start of the bucket the frame is in
 * @param writer    the writer identity of the store that wrote it
 * @param file      the data file's name inside the bucket directory
 * @param offset    the frame's byte offset in the data file
 * @param length    the frame's length in bytes
 * @param timestamp the messages' timestamp
 * @param messages  how many messages the frame holds
 */
public record Appended(String log, Instant bucket, String writer, String file, long offset, int length,
        Instant timestamp, int messages) {
}
