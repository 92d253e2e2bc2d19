package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.zip.CRC32C;

import org.junit.jupiter.api.Test;
import org.leasehold.store.format.FormatException;
import org.leasehold.store.format.LockFile;
import org.leasehold.store.format.LogDescriptor;

/**
 * The small text files (lock file, log descriptor) line by line: every rule of their grammar, each at its edge, with
 * files written here by hand and sealed with a correct checksum so that the rule under test is the one that refuses.
 */
class TextFormatsTest {

    /** The lines, LF-terminated, then {@code crc32c <hex>} of them, as docs/FORMAT.md describes. */
    private static byte[] sealed(String... lines) {
        StringBuilder sb = new StringBuilder();
        for (String l : lines) {
            sb.append(l).append('\n');
        }
        return withCrc(sb.toString().getBytes(StandardCharsets.ISO_8859_1));
    }

    private static byte[] withCrc(byte[] body) {
        CRC32C crc = new CRC32C();
        crc.update(body);
        byte[] tail = String.format("crc32c %08x\n", crc.getValue()).getBytes(StandardCharsets.US_ASCII);
        byte[] all = new byte[body.length + tail.length];
        System.arraycopy(body, 0, all, 0, body.length);
        System.arraycopy(tail, 0, all, body.length, tail.length);
        return all;
    }

    private static String lockRefused(String... lines) {
        return assertThrows(FormatException.class, () -> LockFile.parse(sealed(lines)), String.join("|", lines))
                .getMessage();
    }

    private static final String[] HEAD = {"leasehold-lock 1", "log orders", "bucket 1000000 1000000", "sealer w-0",
        "sealed-at 5"};

    private static String[] lock(String... rest) {
        String[] all = new String[HEAD.length + rest.length];
        System.arraycopy(HEAD, 0, all, 0, HEAD.length);
        System.arraycopy(rest, 0, all, HEAD.length, rest.length);
        return all;
    }

    @Test
    void aLockFileWrittenByHandParsesFieldByField() throws Exception {
        LockFile lf = LockFile.parse(sealed(lock("files 2", "w-0.0.data 12", "x-1.3.data 0")));
        assertEquals("orders", lf.log());
        assertEquals(1_000_000, lf.bucketStart());
        assertEquals(1_000_000, lf.widthMicros());
        assertEquals("w-0", lf.sealer());
        assertEquals(5, lf.sealedAt());
        assertEquals(List.of(new LockFile.Entry("w-0.0.data", 12), new LockFile.Entry("x-1.3.data", 0)), lf.files());
        assertEquals(12, lf.totalBytes());
        assertEquals(0, lf.sizeOf("x-1.3.data"));
        assertEquals(12, lf.sizeOf("w-0.0.data"));
        assertEquals(0, LockFile.parse(sealed(lock("files 0"))).totalBytes(), "a bucket without data files");
        assertEquals(List.of(), LockFile.parse(sealed(lock("files 0"))).files());
    }

    @Test
    void everyLockFileRuleRefusesWithWhatIsWrong() {
        assertTrue(lockRefused(lock("files 2", "w-0.0.data 12")).contains("says 'files 2' but lists 1"));
        assertTrue(lockRefused(lock("files 0", "w-0.0.data 12")).contains("says 'files 0' but lists 1"));
        assertTrue(lockRefused(lock("files -1")).contains("says 'files -1' but lists 0"));
        assertTrue(lockRefused(lock("files 1", " 12")).contains("line 7 is not '<data file> <size>': ' 12'"));
        assertTrue(lockRefused(lock("files 1", "w-0.0.data")).contains("line 7 is not"));
        assertTrue(lockRefused(lock("files 1", "w-0.0.data 1 2")).contains("line 7 is not"));
        assertTrue(lockRefused(lock("files 1", "../w-0.0.data 1")).contains("line 7 is not"));
        assertTrue(lockRefused(lock("files 1", "/w-0.0.data 1")).contains("line 7 is not"), "an absolute path");
        assertTrue(lockRefused(lock("files 1", "w-0.0.data -1")).contains("lists a negative size: 'w-0.0.data -1'"));
        assertTrue(lockRefused(lock("files 1", "w-0.0.data x")).contains("malformed number for 'size': 'x'"));
        assertTrue(lockRefused(lock("files two")).contains("malformed number for 'files': 'two'"));
        assertTrue(lockRefused("leasehold-lock 1", "log orders", "bucket 1000000", "sealer w-0", "sealed-at 5",
                "files 0").contains("malformed 'bucket' line"));
        assertTrue(lockRefused("leasehold-lock 1", "log orders", "bucket 1 2 3", "sealer w-0", "sealed-at 5",
                "files 0").contains("malformed 'bucket' line"));
        assertTrue(lockRefused("leasehold-lock 1", "log orders", "bucket 1000000 1000000", "sealer w-0",
                "sealed 5", "files 0").contains("line 5 should start with 'sealed-at ': 'sealed 5'"));
        assertTrue(lockRefused("leasehold-lock 1", "log orders", "bucket 1000000 1000000", "sealer w-0",
                "sealed-at 5").contains("ends before its 'files' line"));
        assertTrue(lockRefused("leasehold-lock 1").contains("ends before its 'log' line"));
    }

    @Test
    void aLockFileOfAnotherVersionSaysWhichAndAnythingElseIsNotALockFile() {
        FormatException v2 = assertThrows(FormatException.class, () -> LockFile.parse(sealed("leasehold-lock 2")));
        assertEquals(2, v2.version());
        assertEquals("the lock file is in format 'leasehold-lock 2'; this reader knows 'leasehold-lock 1'",
                v2.getMessage());
        assertEquals(-1, assertThrows(FormatException.class,
                () -> LockFile.parse(sealed("leasehold-lock 0"))).version(), "version 0 is no version");
        assertEquals(-1, assertThrows(FormatException.class,
                () -> LockFile.parse(sealed("leasehold-lock x"))).version());
        assertEquals(12, assertThrows(FormatException.class,
                () -> LockFile.parse(sealed("leasehold-lock 12 "))).version());
        FormatException other = assertThrows(FormatException.class, () -> LockFile.parse(sealed("leasehold-log 1")));
        assertEquals(0, other.version());
        assertEquals("the lock file does not start with 'leasehold-lock 1'", other.getMessage());
        assertEquals(0, assertThrows(FormatException.class, () -> LockFile.parse(sealed())).version(), "no line");
    }

    @Test
    void theChecksumLineIsCheckedBeforeAnythingElse() {
        byte[] good = sealed(lock("files 0"));
        FormatException noNewline = assertThrows(FormatException.class,
                () -> LockFile.parse(java.util.Arrays.copyOf(good, good.length - 1)));
        assertEquals("the lock file is empty or does not end with a newline (incomplete)", noNewline.getMessage());
        assertThrows(FormatException.class, () -> LockFile.parse(new byte[0]));
        assertTrue(assertThrows(FormatException.class, () -> LockFile.parse("crc32c 0\n".getBytes(
                StandardCharsets.US_ASCII))).getMessage().contains("does not end with a 'crc32c <8 hex digits>' line"));
        FormatException malformed = assertThrows(FormatException.class,
                () -> LockFile.parse("x\ncrc32c 0000000g\n".getBytes(StandardCharsets.US_ASCII)));
        assertEquals(2, malformed.offset(), "the checksum line's offset");
        assertTrue(malformed.getMessage().contains("malformed checksum line 'crc32c 0000000g'"), malformed.getMessage());
        byte[] flipped = good.clone();
        flipped[3] ^= 1;
        FormatException crc = assertThrows(FormatException.class, () -> LockFile.parse(flipped));
        assertTrue(crc.getMessage().startsWith("the lock file fails its checksum (stored "), crc.getMessage());
        // Only a checksum line, checksumming nothing: no line at all.
        assertEquals("the lock file does not start with 'leasehold-lock 1'", assertThrows(FormatException.class,
                () -> LockFile.parse(withCrc(new byte[0]))).getMessage());
    }

    @Test
    void aNonAsciiByteIsRefusedWhereItIsEvenUnderAValidChecksum() {
        byte[] body = "leasehold-lock 1\nlog \u00e9\n".getBytes(StandardCharsets.ISO_8859_1);
        FormatException e = assertThrows(FormatException.class, () -> LockFile.parse(withCrc(body)));
        assertEquals(21, e.offset());
        assertEquals("the lock file has a non-ASCII byte at offset 21", e.getMessage());
        byte[] first = body.clone();
        first[0] = (byte) 0x80;
        assertEquals(0, assertThrows(FormatException.class, () -> LockFile.parse(withCrc(first))).offset());
    }

    @Test
    void aDescriptorHoldsAPossibleGeometryOnly() throws Exception {
        assertEquals(new LogDescriptor(1, 2, 1), LogDescriptor.parse(new LogDescriptor(1, 2, 1).encode()),
                "1 µs buckets divide a day; grace above the clock error");
        assertEquals(new LogDescriptor(86_400_000_000L, 1, 0), LogDescriptor.parse(
                new LogDescriptor(86_400_000_000L, 1, 0).encode()), "a day; no clock error");
        for (LogDescriptor bad : List.of(new LogDescriptor(0, 2, 1), new LogDescriptor(-1, 2, 1),
                new LogDescriptor(7, 2, 1), new LogDescriptor(1_000_000, 5, 5), new LogDescriptor(1_000_000, 5, 6),
                new LogDescriptor(1_000_000, -2, -1), new LogDescriptor(172_800_000_000L, 2, 1))) {
            FormatException e = assertThrows(FormatException.class, () -> LogDescriptor.parse(bad.encode()),
                    bad.toString());
            assertEquals("the log descriptor holds an impossible geometry (width " + bad.widthMicros() + ", grace "
                    + bad.graceMicros() + ", clock error " + bad.errorMicros() + ")", e.getMessage());
        }
        assertEquals("the log descriptor has 5 lines before its checksum; expected 4", assertThrows(
                FormatException.class, () -> LogDescriptor.parse(sealed("leasehold-log 1", "bucket-width-micros 1",
                        "grace-micros 2", "max-clock-error-micros 1", "more"))).getMessage());
        assertEquals("the log descriptor has 3 lines before its checksum; expected 4", assertThrows(
                FormatException.class, () -> LogDescriptor.parse(sealed("leasehold-log 1", "bucket-width-micros 1",
                        "grace-micros 2"))).getMessage());
        assertEquals("the log descriptor does not start with 'leasehold-log 1'", assertThrows(FormatException.class,
                () -> LogDescriptor.parse(sealed("leasehold-log 2", "bucket-width-micros 1", "grace-micros 2",
                        "max-clock-error-micros 1"))).getMessage());
        assertEquals("the log descriptor does not start with 'leasehold-log 1'", assertThrows(FormatException.class,
                () -> LogDescriptor.parse(sealed())).getMessage());
        assertEquals(new LogDescriptor(1, 3, 2), LogDescriptor.parse(sealed("leasehold-log 1",
                "bucket-width-micros 1", "grace-micros 3", "max-clock-error-micros 2")));
    }
}
