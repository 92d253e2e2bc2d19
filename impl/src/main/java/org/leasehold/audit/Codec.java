package org.leasehold.audit;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/** The building blocks of the audit encodings: big-endian integers, length-prefixed bytes and UTF-8 text. */
final class Codec {

    private Codec() {
    }

    /** A growing big-endian output buffer. */
    static final class Out {
        private byte[] buf;
        private int size;

        Out(int capacity) {
            buf = new byte[capacity];
        }

        private void ensure(int n) {
            if (size + n > buf.length) {
                buf = Arrays.copyOf(buf, Math.max(buf.length * 2, size + n));
            }
        }

        Out u8(int v) {
            ensure(1);
            buf[size++] = (byte) v;
            return this;
        }

        Out u16(int v) {
            ensure(2);
            buf[size++] = (byte) (v >>> 8);
            buf[size++] = (byte) v;
            return this;
        }

        Out i32(int v) {
            ensure(4);
            for (int s = 24; s >= 0; s -= 8) {
                buf[size++] = (byte) (v >>> s);
            }
            return this;
        }

        Out i64(long v) {
            ensure(8);
            for (int s = 56; s >= 0; s -= 8) {
                buf[size++] = (byte) (v >>> s);
            }
            return this;
        }

        Out bytes(byte[] b) {
            ensure(b.length);
            System.arraycopy(b, 0, buf, size, b.length);
            size += b.length;
            return this;
        }

        /** A 2-byte length and the bytes; refuses more than {@code max} bytes. */
        Out sized16(byte[] b, int max, String what) {
            if (b.length > max) {
                throw new IllegalArgumentException(what + " is " + b.length + " bytes; at most " + max
                        + " fit into an audit record");
            }
            return u16(b.length).bytes(b);
        }

        /** A 2-byte length and the UTF-8 bytes of {@code s} ({@code null} is written as empty). */
        Out text(String s, int max, String what) {
            return sized16(utf8(s), max, what);
        }

        /** The bytes written: the buffer itself when they fill it exactly (the encoders size it so), else a copy. */
        byte[] toByteArray() {
            return size == buf.length ? buf : Arrays.copyOf(buf, size);
        }
    }

    /** The UTF-8 bytes of {@code s}, empty for {@code null} (as {@link Out#text} writes them). */
    static byte[] utf8(String s) {
        return s == null ? new byte[0] : s.getBytes(StandardCharsets.UTF_8);
    }

    /** A reader over bytes that names the record and field when something is missing or wrong. */
    static final class In {
        private final ByteBuffer b;
        private final String record;

        In(byte[] bytes, String record) {
            this.b = ByteBuffer.wrap(bytes);
            this.record = record;
        }

        /** A reader over {@code length} bytes of {@code bytes} from {@code offset}. */
        In(byte[] bytes, int offset, int length, String record) {
            this.b = ByteBuffer.wrap(bytes, offset, length).slice();
            this.record = record;
        }

        /** Moves past {@code n} bytes of {@code field}. */
        void skip(int n, String field) throws AuditFormatException {
            need(n, field);
            b.position(b.position() + n);
        }

        /** Moves past a field of {@link #sized16}, checking its length; returns where its bytes start. */
        int skipSized16(String field, int max) throws AuditFormatException {
            int n = length16(field, max);
            int at = b.position();
            skip(n, field);
            return at;
        }

        private void need(int n, String field) throws AuditFormatException {
            if (b.remaining() < n) {
                throw new AuditFormatException("the " + record + " ends at byte " + b.limit() + " inside its field '"
                        + field + "' (needs " + n + " more bytes, has " + b.remaining() + "): it was cut short or is "
                        + "not a " + record);
            }
        }

        int position() {
            return b.position();
        }

        int u8(String field) throws AuditFormatException {
            need(1, field);
            return b.get() & 0xFF;
        }

        int u16(String field) throws AuditFormatException {
            need(2, field);
            return b.getShort() & 0xFFFF;
        }

        int i32(String field) throws AuditFormatException {
            need(4, field);
            return b.getInt();
        }

        long i64(String field) throws AuditFormatException {
            need(8, field);
            return b.getLong();
        }

        byte[] bytes(int n, String field) throws AuditFormatException {
            need(n, field);
            byte[] out = new byte[n];
            b.get(out);
            return out;
        }

        /** Reads the 16-bit length of {@code field}, at most {@code max}, and checks that its bytes are there. */
        private int length16(String field, int max) throws AuditFormatException {
            int n = u16(field + " length");
            if (n > max) {
                throw new AuditFormatException("the " + record + "'s field '" + field + "' is " + n
                        + " bytes long; at most " + max + " are allowed");
            }
            need(n, field);
            return n;
        }

        byte[] sized16(String field, int max) throws AuditFormatException {
            int n = length16(field, max);
            return bytes(n, field);
        }

        String text(String field, int max) throws AuditFormatException {
            int n = length16(field, max);
            byte[] a = b.array();
            int start = b.arrayOffset() + b.position();
            b.position(b.position() + n);
            // Names, holders and service ids are mostly ASCII, which is UTF-8 as it is: no decoder needed.
            boolean ascii = true;
            for (int i = start; i < start + n; i++) {
                if (a[i] < 0) {
                    ascii = false;
                    break;
                }
            }
            if (ascii) {
                return new String(a, start, n, StandardCharsets.US_ASCII);
            }
            try {
                return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(a, start, n)).toString();
            } catch (CharacterCodingException e) {
                throw new AuditFormatException("the " + record + "'s field '" + field + "' is not UTF-8", e);
            }
        }

        void magic(int expected, String name) throws AuditFormatException {
            int m = i32("magic");
            if (m != expected) {
                throw new AuditFormatException(String.format("not a %s: magic 0x%08X, expected 0x%08X (%s)", record, m,
                        expected, name));
            }
        }

        void version(int supported) throws AuditFormatException {
            int v = u8("version");
            if (v != supported) {
                throw new AuditFormatException("the " + record + " has version " + v + "; this reader knows version "
                        + supported + " only: read it with a newer Leasehold");
            }
        }

        void end() throws AuditFormatException {
            if (b.hasRemaining()) {
                throw new AuditFormatException("the " + record + " has " + b.remaining()
                        + " bytes after its last field: it is not a " + record + " of this version");
            }
        }
    }
}
