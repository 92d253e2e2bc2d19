package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.T0;
import static org.leasehold.store.StoreFixture.config;
import static org.leasehold.store.StoreFixture.freshDir;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.leasehold.bag.AppendRequest;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.StoreUnavailableException;
import org.leasehold.store.check.LogChecker;
import org.leasehold.time.ManualTimeSource;

/** A full disk (a 1 MiB tmpfs): a clear error, nothing acknowledged lost, and writing resumes once space is freed. */
class DiskFullTest {

    private static byte[] payload(int id, int size) {
        ByteBuffer b = ByteBuffer.allocate(size);
        b.putInt(id);
        while (b.hasRemaining()) {
            b.put((byte) id);
        }
        return b.array();
    }

    @Test
    void aFullDiskRefusesAppendsClearlyAndLosesNothingAcknowledged() throws Exception {
        Path dir = freshDir("disk-full");
        String[] why = new String[1];
        Tmpfs mount = Tmpfs.mount(dir, "size=1m", why);
        Assumptions.assumeTrue(mount != null, () -> why[0]);
        try {
            Path ballast = dir.resolve("ballast");
            Files.write(ballast, new byte[256 << 10]);
            ManualTimeSource time = StoreFixture.clock();
            Set<Integer> acked = new HashSet<>();
            Set<Integer> refused = new HashSet<>();
            StoreUnavailableException full = null;
            try (FileBagStore store = FileBagStore.open(config(dir).build(), time)) {
                int id = 0;
                while (full == null && id < 1000) {
                    try {
                        store.append(AppendRequest.of("log", List.of(), payload(id, 60_000)));
                        acked.add(id);
                    } catch (StoreUnavailableException e) {
                        full = e;
                        refused.add(id);
                    }
                    id++;
                }
                assertNotNull(full, "the 1 MiB file system filled up");
                assertTrue(full.getMessage().contains("No space left on device"), full.getMessage());
                assertTrue(full.getMessage().toLowerCase(java.util.Locale.ROOT).contains("free space"), full.getMessage());
                assertTrue(acked.size() >= 5, "some appends fit before: " + acked.size());
                // A second attempt while still full fails the same way, in a new data file.
                try {
                    store.append(AppendRequest.of("log", List.of(), payload(id, 60_000)));
                    acked.add(id);
                } catch (StoreUnavailableException e) {
                    refused.add(id);
                }
                id++;

                Files.delete(ballast);
                for (int k = 0; k < 3; k++, id++) {
                    store.append(AppendRequest.of("log", List.of(), payload(id, 60_000)));
                    acked.add(id);
                }
                time.advance(Duration.ofSeconds(3));
                store.sealThrough("log", T0, T0.plusSeconds(1));

                List<Integer> read = new ArrayList<>();
                try (MessageStream s = store.read(ReadRequest.all("log"))) {
                    Message m;
                    while ((m = s.next()) != null) {
                        read.add(m.payloadBuffer().getInt());
                    }
                    for (var p : s.problems()) {
                        assertEquals(org.leasehold.bag.ReadProblem.Kind.TORN_TAIL, p.kind(), p.toString());
                    }
                }
                assertEquals(acked, new HashSet<>(read), "exactly the acknowledged appends are readable");
                for (int r : refused) {
                    assertTrue(!read.contains(r), "refused append " + r + " is not readable");
                }
                LogChecker.Result c = LogChecker.check(dir.resolve("log"));
                assertEquals(List.of(), c.violations());
                assertEquals(acked.size(), c.ordered().size());
            }
        } finally {
            mount.close();
        }
    }
}
