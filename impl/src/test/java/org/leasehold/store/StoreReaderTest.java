package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.T0;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.StoreUnavailableException;
import org.leasehold.bag.UnknownLogException;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.Micros;

/**
 * The read-only open: it takes no writer identity (a writer opened beside it gets the first instance), creates
 * nothing, reads what a writer wrote, and surveys a log's buckets before and after sealing.
 */
class StoreReaderTest {

    @Test
    void aReaderTakesNoWriterIdentityCreatesNothingAndReadsAndSurveys() throws Exception {
        Path root = StoreFixture.freshDir("reader");
        Path locks = StoreFixture.freshDir("reader-locks");
        ManualTimeSource clock = StoreFixture.clock();
        try (StoreReader reader = StoreReader.open(root, clock)) {
            assertEquals(List.of(), reader.logs());
            assertThrows(UnknownLogException.class, () -> reader.read(ReadRequest.all("orders")));
            assertThrows(UnknownLogException.class, () -> reader.survey("orders", 0, Long.MAX_VALUE, 0));
            try (java.util.stream.Stream<Path> s = Files.list(root)) {
                assertEquals(List.of(), s.toList(), "a reader wrote into the store");
            }
            try (FileBagStore writer = FileBagStore.open(StoreFixture.config(root).localLockDir(locks).host("h").build(),
                    clock)) {
                assertEquals("h-0", writer.writerId(), "the reader took a writer identity");
                writer.append(StoreFixture.req("orders", List.of(StoreFixture.lease("a", 1)), "x", "y"));
                Files.createFile(root.resolve("not-a-log.txt"));
                assertEquals(List.of("orders"), reader.logs());
                try (MessageStream s = reader.read(ReadRequest.all("orders"))) {
                    Message m = s.next();
                    assertEquals("x", StoreFixture.text(m));
                    assertTrue(m.tentative());
                    assertEquals("y", StoreFixture.text(s.next()));
                    assertNull(s.next());
                }
                LogSurvey open = reader.survey("orders", 0, LogGeometry.MAX_MICROS, Micros.of(T0.plusSeconds(1)));
                assertEquals(1, open.buckets());
                assertEquals(0, open.sealedBuckets());
                assertEquals(0, open.dueUnsealed());
                assertEquals(1, open.dataFiles());
                long size = Files.size(LogGeometry.bucketDir(root.resolve("orders"), Micros.of(T0))
                        .resolve(writer.writerId() + ".0.data"));
                assertTrue(size > 0);
                assertEquals(size, open.bytes());
                assertEquals(size, open.unsealedBytes());
                assertNull(open.sealLag());
                assertEquals(T0, open.oldestUnsealed());
                assertEquals(1, reader.survey("orders", 0, LogGeometry.MAX_MICROS, Micros.of(T0.plusSeconds(3)))
                        .dueUnsealed());

                clock.advance(Duration.ofSeconds(5));
                writer.sealThrough("orders", T0, T0.plusSeconds(2));
                LogSurvey sealed = reader.survey("orders", 0, LogGeometry.MAX_MICROS, clock.nowMicros());
                assertEquals(2, sealed.buckets());
                assertEquals(2, sealed.sealedBuckets());
                assertEquals(size, sealed.sealedBytes());
                assertEquals(0, sealed.refusedBytes());
                assertEquals(T0.plusSeconds(2), sealed.newestSealedEnd());
                assertEquals(Duration.ofSeconds(3), sealed.sealLag());
                assertNull(sealed.oldestUnsealed());
                assertEquals(1, reader.survey("orders", Micros.of(T0.plusSeconds(1)), LogGeometry.MAX_MICROS,
                        clock.nowMicros()).buckets());
            }
        }
        assertFalse(Files.exists(locks.resolve("h-1.lock")));
        assertThrows(StoreUnavailableException.class, () -> StoreReader.open(root.resolve("absent"), clock));
    }
}
