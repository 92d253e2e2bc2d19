package org.leasehold.bag;

import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * One message as read back from a log, with where it is stored. Messages are delivered in
 * {@code (timestamp, writer, file, offset, index)} order; all messages of one append share timestamp, file and offset
 * and differ by {@link #index()}.
 *
 * <p>Immutable: {@link #payload()} returns a copy, {@link #payloadBuffer()} a read-only view. A reader may let the
 * messages it reads together share one backing array (of a few tens of KiB) instead of copying every payload; keep
 * {@link #payload()} rather than the message itself when holding one payload for long.
 */
public final class Message {
    private final String log;
    private final Instant bucket;
    private final String writer;
    private final String file;
    private final long offset;
    private final int index;
    private final Instant timestamp;
    private final List<StampedLease> leases;
    private final byte[] data;
    private final int payloadOffset;
    private final int payloadLength;
    private final boolean tentative;

    /**
     * A message; {@code payload} is taken over, not copied (the reader hands over a fresh array).
     *
     * @param log       the log
     * @param bucket    the start of its bucket
     * @param writer    the writer identity
     * @param file      the data file's name in the bucket directory
     * @param offset    the byte offset of its frame in the data file
     * @param index     its position inside the frame (0 for the first)
     * @param timestamp its timestamp
     * @param leases    the leases it was written under, with generations and witnesses
     * @param payload   its payload
     * @param tentative true if its bucket was not sealed when it was read: it may still be joined by other messages
     *                  that sort before it, so decisions taken on it are provisional
     */
    public Message(String log, Instant bucket, String writer, String file, long offset, int index, Instant timestamp,
            List<StampedLease> leases, byte[] payload, boolean tentative) {
        this(log, bucket, writer, file, offset, index, timestamp, leases, payload, 0, payload.length, tentative);
    }

    /**
     * A message whose payload is {@code length} bytes of {@code data} from {@code payloadOffset}; {@code data} is
     * shared, not copied, and must never change.
     */
    public Message(String log, Instant bucket, String writer, String file, long offset, int index, Instant timestamp,
            List<StampedLease> leases, byte[] data, int payloadOffset, int length, boolean tentative) {
        this.log = Objects.requireNonNull(log);
        this.bucket = Objects.requireNonNull(bucket);
        this.writer = Objects.requireNonNull(writer);
        this.file = Objects.requireNonNull(file);
        this.offset = offset;
        this.index = index;
        this.timestamp = Objects.requireNonNull(timestamp);
        this.leases = List.copyOf(leases);
        this.data = Objects.requireNonNull(data);
        if (payloadOffset < 0 || length < 0 || payloadOffset > data.length - length) {
            throw new IndexOutOfBoundsException("payload [" + payloadOffset + ", +" + length + ") of " + data.length);
        }
        this.payloadOffset = payloadOffset;
        this.payloadLength = length;
        this.tentative = tentative;
    }

    public String log() {
        return log;
    }

    /** The start of the bucket the message is stored in. */
    public Instant bucket() {
        return bucket;
    }

    public String writer() {
        return writer;
    }

    /** The data file's name inside the bucket directory. */
    public String file() {
        return file;
    }

    /** The byte offset of the message's frame in its data file. */
    public long offset() {
        return offset;
    }

    /** The message's position in its frame. */
    public int index() {
        return index;
    }

    public Instant timestamp() {
        return timestamp;
    }

    /** The leases it was written under. */
    public List<StampedLease> leases() {
        return leases;
    }

    /** True if the message was written under a lease on {@code name}. */
    public boolean hasLease(String name) {
        for (StampedLease l : leases) {
            if (l.name().equals(name)) {
                return true;
            }
        }
        return false;
    }

    /** A copy of the payload. */
    public byte[] payload() {
        return Arrays.copyOfRange(data, payloadOffset, payloadOffset + payloadLength);
    }

    /** The payload as a read-only buffer (position 0, limit its length), without copying. */
    public ByteBuffer payloadBuffer() {
        return ByteBuffer.wrap(data, payloadOffset, payloadLength).slice().asReadOnlyBuffer();
    }

    public int payloadLength() {
        return payloadLength;
    }

    /** True if the bucket was not sealed at read time (see the constructor). */
    public boolean tentative() {
        return tentative;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Message m && m.offset == offset && m.index == index && m.tentative == tentative
                && m.log.equals(log) && m.bucket.equals(bucket) && m.file.equals(file) && m.writer.equals(writer)
                && m.timestamp.equals(timestamp) && m.leases.equals(leases) && Arrays.equals(m.data, m.payloadOffset,
                m.payloadOffset + m.payloadLength, data, payloadOffset, payloadOffset + payloadLength);
    }

    @Override
    public int hashCode() {
        return Objects.hash(log, bucket, file, offset, index);
    }

    @Override
    public String toString() {
        return "Message[" + log + " " + timestamp + " " + file + "@" + offset + "#" + index + ", leases " + leases + ", "
                + payloadLength + " B" + (tentative ? ", tentative" : "") + "]";
    }
}
