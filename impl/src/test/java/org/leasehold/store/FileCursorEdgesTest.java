package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.T0;
import static org.leasehold.store.StoreFixture.config;
import static org.leasehold.store.StoreFixture.freshDir;
import static org.leasehold.store.StoreFixture.req;
import static org.leasehold.store.StoreFixture.text;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.leasehold.bag.Appended;
import org.leasehold.bag.CorruptRecordException;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadProblem;
import org.leasehold.bag.ReadRequest;
import org.leasehold.store.format.Frames;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.Micros;

/**
 * What a reader accepts of a sealed data file at the edges: frame timestamps exactly at the bucket's ends and equal to
 * the previous one, and tails just under and exactly one frame header long.
 */
class FileCursorEdgesTest {

    private static byte[] frame(Instant t, String payload) {
        List<byte[]> payloads = List.of(payload.getBytes(StandardCharsets.UTF_8));
        int size = (int) Frames.size(List.of(), new byte[0][], payloads);
        ByteBuffer b = Frames.encode(Micros.of(t), List.of(), new byte[0][], payloads, size);
        return b.array();
    }

    private record Read(List<String> texts, List<ReadProblem> problems) {
    }

    private static Read read(FileBagStore store, ReadRequest r) throws Exception {
        List<String> got = new ArrayList<>();
        try (MessageStream s = store.read(r)) {
            Message m;
            while ((m = s.next()) != null) {
                got.add(text(m));
            }
            return new Read(got, s.problems());
        }
    }

    /** A store whose bucket [T0, T0 + 1 s) holds "a" then {@code tail}, sealed with the tail listed. */
    private static long sealedWithTail(FileBagStore store, ManualTimeSource time, Path root, byte[]... tail)
            throws Exception {
        Appended a = store.append(req("log", List.of(), "a"));
        Path file = LogGeometry.bucketDir(root.resolve("log"), Micros.of(T0)).resolve(a.file());
        for (byte[] t : tail) {
            Files.write(file, t, StandardOpenOption.APPEND);
        }
        time.advance(Duration.ofSeconds(4));
        store.sealThrough("log", T0, T0.plusSeconds(1));
        return a.length();
    }

    @Test
    void framesAtTheBucketsFirstAndLastMicrosecondAreReadAndOneOutsideIsCorrupt() throws Exception {
        Path root = freshDir("cursor-edges-time");
        ManualTimeSource time = StoreFixture.clock();
        byte[] atEnd = frame(T0.plusSeconds(1), "at end");
        byte[] beforeStart = frame(T0.minusNanos(1_000), "before start");
        byte[] last = frame(T0.plusSeconds(1).minusNanos(1_000), "last");
        byte[] again = frame(T0.plusSeconds(1).minusNanos(1_000), "same again");
        byte[] back = frame(T0.plusMillis(500), "back");
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            long a = sealedWithTail(store, time, root, atEnd, beforeStart, last, again, back);
            Read r = read(store, ReadRequest.all("log").skippingUnreadable());
            assertEquals(List.of("a", "last", "same again"), r.texts());
            assertEquals(3, r.problems().size(), r.problems()::toString);
            ReadProblem end = r.problems().get(0);
            assertEquals(ReadProblem.Kind.CORRUPT_RECORD, end.kind());
            assertEquals(a, end.offset());
            assertEquals(a + atEnd.length, end.end());
            long endMicros = Micros.of(T0.plusSeconds(1));
            assertTrue(end.detail().contains("the frame's timestamp " + endMicros + " µs lies outside the bucket ["
                    + Micros.of(T0) + ", " + endMicros + ")"), end.detail());
            assertEquals(a + atEnd.length, r.problems().get(1).offset());
            assertTrue(r.problems().get(1).detail().contains("timestamp " + (Micros.of(T0) - 1) + " µs lies outside"),
                    r.problems().get(1).detail());
            ReadProblem below = r.problems().get(2);
            long backAt = a + atEnd.length + beforeStart.length + last.length + again.length;
            assertEquals(backAt, below.offset());
            assertEquals(backAt + back.length, below.end());
            assertTrue(below.detail().contains("is below the previous frame's " + (endMicros - 1) + " µs"),
                    below.detail());

            CorruptRecordException e = assertThrows(CorruptRecordException.class,
                    () -> read(store, ReadRequest.all("log")));
            assertEquals(a, e.offset());
        }
    }

    @Test
    void aTailOfZerosOneHeaderLongIsTornAndShorterOnesSayHowManyBytesRemain() throws Exception {
        for (int n : new int[] {Frames.HEADER - 1, Frames.HEADER}) {
            Path root = freshDir("cursor-edges-tail-" + n);
            ManualTimeSource time = StoreFixture.clock();
            try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
                long a = sealedWithTail(store, time, root, new byte[n]);
                Read r = read(store, ReadRequest.all("log"));
                assertEquals(List.of("a"), r.texts());
                assertEquals(1, r.problems().size());
                ReadProblem p = r.problems().get(0);
                assertEquals(ReadProblem.Kind.TORN_TAIL, p.kind());
                assertEquals(a, p.offset());
                assertEquals(a + n, p.end());
                assertTrue(p.detail().startsWith(n < Frames.HEADER
                        ? "only " + n + " bytes remain: an incomplete frame header"
                        : "the rest of the file is zero bytes"), p.detail());
            }
        }
    }
}
