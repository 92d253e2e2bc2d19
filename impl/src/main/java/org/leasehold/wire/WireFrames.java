package org.leasehold.wire;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;

import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.MessageLite;
import com.google.protobuf.Parser;



/**
 * The framing of the socket transport (see {@code SocketHello} in the protocol): a 4-byte big-endian length, then one
 * protobuf message of that many bytes.
 */
public final class WireFrames {
    /** The length prefix. */
    public static final int HEADER_BYTES = 4;

    private WireFrames() {
    }

    /** One frame's bytes, the length prefix included. */
    public static byte[] encode(MessageLite message) {
        int n = message.getSerializedSize();
        byte[] frame = new byte[HEADER_BYTES + n];
        encodeInto(frame, n, message);
        return frame;
    }

    /** Writes the frame of {@code message}, {@code n} bytes once serialized, at the start of {@code frame}. */
    private static void encodeInto(byte[] frame, int n, MessageLite message) {
        frame[0] = (byte) (n >>> 24);
        frame[1] = (byte) (n >>> 16);
        frame[2] = (byte) (n >>> 8);
        frame[3] = (byte) n;
        CodedOutputStream out = CodedOutputStream.newInstance(frame, HEADER_BYTES, n);
        try {
            message.writeTo(out);
        } catch (IOException e) {
            throw new IllegalStateException("a protobuf message did not fit its own serialized size", e);
        }
        out.checkNoSpaceLeft();
    }

    /**
     * Encodes frames into a buffer it keeps, so that a connection's writer does not allocate a new array per frame. Not
     * thread-safe: one writer at a time, which writes {@link #buffer()}'s first bytes before it encodes the next frame.
     */
    public static final class Encoder {
        /** Buffers up to this size are kept for the next frame; a larger frame gets an array of its own. */
        static final int KEPT_BYTES = 64 * 1024;
        private byte[] buf = new byte[4 * 1024];
        private byte[] last = buf;

        /** Encodes {@code message} as one frame; returns its length in bytes, at the start of {@link #buffer()}. */
        public int encode(MessageLite message) {
            int n = message.getSerializedSize();
            int total = HEADER_BYTES + n;
            if (total > buf.length) {
                byte[] bigger = new byte[Math.max(total, Math.min(KEPT_BYTES, buf.length * 2))];
                if (bigger.length <= KEPT_BYTES) {
                    buf = bigger;
                }
                last = bigger;
            } else {
                last = buf;
            }
            encodeInto(last, n, message);
            return total;
        }

        /** The array the last frame was encoded into. */
        public byte[] buffer() {
            return last;
        }
    }

    /** Writes one frame (the caller flushes). Not thread-safe: the caller holds the stream. */
    public static void write(OutputStream out, MessageLite message) throws IOException {
        out.write(encode(message));
    }

    /** A frame that cannot be read: too large, truncated, or not the expected message. */
    public static final class BadFrameException extends IOException {
        private static final long serialVersionUID = 1L;

        /** What kind of fault, for metrics: {@code too_large}, {@code truncated}, {@code malformed}. */
        private final String fault;

        public BadFrameException(String fault, String message) {
            super(message);
            this.fault = fault;
        }

        public String fault() {
            return fault;
        }
    }

    /**
     * Reads frames from a stream. A read that times out ({@link java.net.SocketTimeoutException}) keeps what has
     * arrived of a frame, so the next call goes on with it. Not thread-safe: one reader at a time.
     */
    public static final class Reader {
        private final InputStream in;
        private final int maxBytes;
        private byte[] buf = new byte[16 * 1024];
        private int start;
        private int end;

        /** @param maxBytes the largest message accepted; a longer frame is refused before it is read */
        public Reader(InputStream in, int maxBytes) {
            this.in = in;
            this.maxBytes = maxBytes;
        }

        /** Whether a whole frame has already arrived (the next {@link #next} does not block). */
        public boolean hasFrame() {
            int avail = end - start;
            return avail >= HEADER_BYTES && avail >= HEADER_BYTES + length();
        }

        private int length() {
            return ((buf[start] & 0xff) << 24) | ((buf[start + 1] & 0xff) << 16) | ((buf[start + 2] & 0xff) << 8)
                    | (buf[start + 3] & 0xff);
        }

        /**
         * The next message, parsed with {@code parser} as a {@code type}.
         *
         * @throws EOFException       the stream ended between frames
         * @throws BadFrameException  the frame is longer than the limit, ends before its length, or does not parse
         */
        public <T> T next(Parser<T> parser, String type) throws IOException {
            while (true) {
                int avail = end - start;
                if (avail >= HEADER_BYTES) {
                    int n = length();
                    if (n < 0 || n > maxBytes) {
                        throw new BadFrameException("too_large", "a frame announces " + (n & 0xffff_ffffL) + " bytes, "
                                + "more than the limit of " + maxBytes + " bytes: is the peer speaking Leasehold's socket "
                                + "protocol (4-byte length, then a protobuf message)? Send smaller requests");
                    }
                    if (avail >= HEADER_BYTES + n) {
                        T message;
                        try {
                            message = parser.parseFrom(buf, start + HEADER_BYTES, n);
                        } catch (InvalidProtocolBufferException e) {
                            throw new BadFrameException("malformed", "a frame of " + n + " bytes is not a valid " + type
                                    + " message (" + e.getMessage() + ")");
                        }
                        start += HEADER_BYTES + n;
                        if (start == end) {
                            start = 0;
                            end = 0;
                        }
                        return message;
                    }
                    room(HEADER_BYTES + n);
                } else {
                    room(HEADER_BYTES);
                }
                int r = in.read(buf, end, buf.length - end);
                if (r < 0) {
                    if (end > start) {
                        throw new BadFrameException("truncated", "the connection ended inside a frame, after "
                                + (end - start) + " byte(s) of it");
                    }
                    throw new EOFException("the connection ended");
                }
                end += r;
            }
        }

        /** Makes room for a frame of {@code total} bytes from {@code start}. */
        private void room(int total) {
            if (buf.length - start >= total && end < buf.length) {
                return;
            }
            int avail = end - start;
            if (total > buf.length) {
                byte[] bigger = new byte[Math.max(total, buf.length * 2)];
                System.arraycopy(buf, start, bigger, 0, avail);
                buf = bigger;
            } else {
                System.arraycopy(buf, start, buf, 0, avail);
            }
            start = 0;
            end = avail;
        }
    }
}
