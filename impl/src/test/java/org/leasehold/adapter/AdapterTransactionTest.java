package org.leasehold.adapter;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import javax.transaction.xa.XAException;
import javax.transaction.xa.XAResource;
import javax.transaction.xa.Xid;

import jakarta.transaction.HeuristicMixedException;
import jakarta.transaction.HeuristicRollbackException;
import jakarta.transaction.RollbackException;
import jakarta.transaction.Transaction;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.UnknownLogException;
import org.leasehold.bag.StampedLease;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.connector.LeaseOptions;
import org.leasehold.connector.NoLeaseHeldException;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseLostException;
import org.leasehold.lease.LeaseMode;
import org.leasehold.lease.LeaseRequest;

/**
 * The adapter's transaction paths, run for real: the Narayana transaction manager drives two-phase commit (with a
 * second XA resource beside ours), one-phase commit, rollback and recovery; what was committed is read back from
 * the bag store directory.
 */
class AdapterTransactionTest {
    private AdapterFixture fx;

    @BeforeEach
    void start() throws Exception {
        fx = new AdapterFixture("tx", mcf -> { });
    }

    @AfterEach
    void stop() throws Exception {
        fx.close();
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String text(Message m) {
        return new String(m.payload(), StandardCharsets.UTF_8);
    }

    /** A second resource manager in the transaction, so that the transaction manager must run two phases. */
    static class OtherResource implements XAResource {
        final List<String> calls = new ArrayList<>();
        boolean failPrepare;

        @Override
        public void start(Xid xid, int flags) {
            calls.add("start");
        }

        @Override
        public void end(Xid xid, int flags) {
            calls.add("end");
        }

        @Override
        public int prepare(Xid xid) throws XAException {
            calls.add("prepare");
            if (failPrepare) {
                XAException e = new XAException("the other resource votes rollback");
                e.errorCode = XAException.XA_RBROLLBACK;
                throw e;
            }
            return XA_OK;
        }

        @Override
        public void commit(Xid xid, boolean onePhase) {
            calls.add("commit" + (onePhase ? "-1pc" : ""));
        }

        @Override
        public void rollback(Xid xid) {
            calls.add("rollback");
        }

        @Override
        public Xid[] recover(int flag) {
            return new Xid[0];
        }

        @Override
        public void forget(Xid xid) {
            calls.add("forget");
        }

        @Override
        public boolean isSameRM(XAResource other) {
            return other == this;
        }

        @Override
        public int getTransactionTimeout() {
            return 0;
        }

        @Override
        public boolean setTransactionTimeout(int seconds) {
            return false;
        }
    }

    @Test
    void twoPhaseCommitWritesTheMessagesOnceAndReleasesWithTheirTimestamp() throws Exception {
        OtherResource other = new OtherResource();
        fx.tm.begin();
        fx.tm.getTransaction().enlistResource(other);
        Lease lease;
        try (LeaseConnection c = fx.connection()) {
            lease = c.acquire("account/1", "account/2");
            assertEquals(LeaseKind.TENTATIVE, lease.kind(), "inside a transaction leases are tentative");
            c.append(bytes("debit 1 by 5"), bytes("credit 2 by 5"));
        }
        assertTrue(fx.messages().isEmpty(), "nothing is written before commit");
        fx.tm.commit();
        assertEquals(List.of("start", "end", "prepare", "commit"), other.calls);
        List<Message> written = fx.messages();
        assertEquals(List.of("debit 1 by 5", "credit 2 by 5"), written.stream().map(AdapterTransactionTest::text).toList());
        Message m = written.get(0);
        assertEquals(written.get(1).timestamp(), m.timestamp(), "one transaction, one timestamp");
        assertEquals(List.of("account/1@" + lease.grant("account/1").generation(), "account/2@"
                + lease.grant("account/2").generation()), nameAndGeneration(m));
        assertWitnesses(m);
        assertTrue(m.timestamp().isAfter(lease.floor()) && m.timestamp().isBefore(lease.deadline()));
        try (LeaseConnection c = fx.connection()) {
            Lease next = c.acquire("account/1");
            assertEquals(m.timestamp(), next.floor(), "released with the commit's timestamp as watermark");
        }
        assertTrue(fx.rm().recover(XAResource.TMSTARTRSCAN).length == 0, "no branch left in doubt");
    }

    /** Tries to take {@code name} at once for another holder: "busy", or "free" (then releases it). */
    private String tryTake(String name) {
        try {
            org.leasehold.lease.LeaseService leases = fx.mcf.runtime().leases();
            Lease l = leases.acquire(LeaseRequest.builder(new HolderId("other-server", "probe"), name)
                    .waitFor(Duration.ZERO).build());
            leases.release(l, null, null);
            return "free";
        } catch (LeaseBusyException e) {
            return "busy";
        } catch (Exception e) {
            return e.toString();
        }
    }

    /** A second resource, enlisted after ours, that looks at the lease while it commits (a slow database, say). */
    private OtherResource databaseThatProbes(String name, List<String> seen) {
        return new OtherResource() {
            @Override
            public void commit(Xid xid, boolean onePhase) {
                super.commit(xid, onePhase);
                try {
                    seen.add("our branch " + (fx.rm().metrics().getCommits() + fx.rm().metrics().getReadOnlyBranches() > 0
                            ? "ended" : "open") + ", lease " + tryTake(name));
                } catch (jakarta.resource.ResourceException e) {
                    seen.add(e.toString());
                }
            }
        };
    }

    @Test
    void leasesAreHeldUntilTheWholeTransactionCompletedNotOnlyOurBranch() throws Exception {
        List<String> seen = new ArrayList<>();
        fx.tm.begin();
        try (LeaseConnection c = fx.connection()) {
            c.acquire("stock/1");
            c.append(bytes("reserve 1"));
        }
        fx.tm.getTransaction().enlistResource(databaseThatProbes("stock/1", seen));
        fx.tm.commit();
        assertEquals(List.of("our branch ended, lease busy"), seen,
                "while the database's branch commits, the lease is still held, though our branch has committed");
        Message m = fx.messages().get(0);
        assertEquals("free", tryTake("stock/1"), "released once the transaction completed");
        try (LeaseConnection c = fx.connection()) {
            assertEquals(m.timestamp(), c.acquire("stock/1").floor(), "with the commit's timestamp as watermark");
        }
    }

    @Test
    void aTransactionThatWritesOnlyElsewhereHoldsItsLeasesUntilItCompletes() throws Exception {
        List<String> seen = new ArrayList<>();
        fx.tm.begin();
        try (LeaseConnection c = fx.connection()) {
            c.acquire("row/9"); // guards a database row; nothing is appended to the log
        }
        fx.tm.getTransaction().enlistResource(databaseThatProbes("row/9", seen));
        fx.tm.commit();
        assertEquals(List.of("our branch ended, lease busy"), seen);
        assertEquals(1, fx.rm().metrics().getReadOnlyBranches());
        assertEquals("free", tryTake("row/9"));
        assertTrue(fx.messages().isEmpty());
    }

    @Test
    void theFencingGenerationOfEveryHeldNameIsThere() throws Exception {
        fx.tm.begin();
        try (LeaseConnection c = fx.connection()) {
            Lease lease = c.acquire("fence/a", "fence/b");
            assertEquals(lease.grant("fence/a").generation(), c.generation("fence/a"));
            assertEquals(lease.grant("fence/b").generation(), c.generation("fence/b"));
            NoLeaseHeldException none = assertThrows(NoLeaseHeldException.class, () -> c.generation("fence/c"));
            assertTrue(none.getMessage().contains("no lease on 'fence/c'"), none.getMessage());
            c.append(bytes("fenced"));
        }
        fx.tm.commit();
        try (LeaseConnection c = fx.connection()) {
            long before = fx.messages().get(0).leases().get(0).generation();
            c.acquire("fence/a");
            assertTrue(c.generation("fence/a") > before, "the next holder's generation is higher");
        }
    }

    @Test
    void aNewLogReadsAsEmptyBeforeItsFirstAppend() throws Exception {
        try (LeaseConnection c = fx.connection();
                MessageStream s = c.read(ReadRequest.all("ledger"))) {
            assertNull(s.next(), "the adapter's log exists from its start, empty");
        }
        try (LeaseConnection c = fx.connection()) {
            UnknownLogException other = assertThrows(UnknownLogException.class,
                    () -> c.read(ReadRequest.all("never-written")));
            assertTrue(other.getMessage().contains("never-written"), other.getMessage());
        }
        fx.tm.begin();
        try (LeaseConnection c = fx.connection()) {
            c.acquire("first");
            try (MessageStream s = c.read(ReadRequest.all("ledger"))) {
                assertNull(s.next());
            }
            c.append(bytes("first entry"));
        }
        fx.tm.commit();
        assertEquals(1, fx.messages().size());
    }

    @Test
    void aSecondEmbeddedServerOnTheLogSaysWhoOwnsItAndUntilWhen() throws Exception {
        try (LeaseConnection c = fx.connection()) {
            c.acquire("owned");
        }
        Exception e = assertThrows(Exception.class, () -> {
            AdapterFixture second = new AdapterFixture(fx.root, fx.time, mcf -> mcf.setWriterId("writer-b"));
            try (LeaseConnection c = second.connection()) {
                c.acquire("owned");
            } finally {
                second.close();
            }
        });
        assertTrue(e.getMessage().contains("served by the embedded lease service of writer 'writer-a'")
                && e.getMessage().contains("ownership lapses at"), e.getMessage());
    }

    @Test
    void onePhaseCommitWritesWithoutTheJournal() throws Exception {
        fx.tm.begin();
        try (LeaseConnection c = fx.connection()) {
            c.acquire("solo");
            c.append(bytes("only resource"));
        }
        fx.tm.commit();
        assertEquals(List.of("only resource"), fx.messages().stream().map(AdapterTransactionTest::text).toList());
    }

    @Test
    void rollbackWritesNothingAndLeavesTheFloor() throws Exception {
        Instant floor;
        try (LeaseConnection c = fx.connection()) {
            floor = c.acquire("r").floor();
        }
        fx.tm.begin();
        try (LeaseConnection c = fx.connection()) {
            c.acquire("r");
            c.append(bytes("never"));
        }
        fx.tm.rollback();
        assertTrue(fx.messages().isEmpty());
        try (LeaseConnection c = fx.connection()) {
            assertEquals(floor, c.acquire("r").floor());
        }
    }

    @Test
    void otherResourceVotingRollbackRollsOursBackToo() throws Exception {
        OtherResource other = new OtherResource();
        other.failPrepare = true;
        fx.tm.begin();
        fx.tm.getTransaction().enlistResource(other);
        try (LeaseConnection c = fx.connection()) {
            c.acquire("both");
            c.append(bytes("with the other"));
        }
        assertThrows(RollbackException.class, () -> fx.tm.commit());
        assertTrue(fx.messages().isEmpty());
        assertEquals(0, fx.rm().recover(XAResource.TMSTARTRSCAN).length, "the prepared branch was rolled back");
    }

    @Test
    void aTransactionThatOnlyTookLeasesIsReadOnly() throws Exception {
        OtherResource other = new OtherResource();
        fx.tm.begin();
        fx.tm.getTransaction().enlistResource(other);
        try (LeaseConnection c = fx.connection()) {
            c.acquire("ro");
        }
        fx.tm.commit();
        assertTrue(fx.messages().isEmpty());
        assertEquals(1, fx.rm().metrics().getReadOnlyBranches());
        try (LeaseConnection c = fx.connection()) {
            c.acquire("ro");
        }
    }

    @Test
    void aSecondTransactionWaitsAndWritesAboveTheFirst() throws Exception {
        fx.tm.begin();
        Transaction first = fx.tm.getTransaction();
        try (LeaseConnection c = fx.connection()) {
            c.acquire("hot");
            c.append(bytes("first"));
        }
        fx.tm.suspend();
        CountDownLatch asking = new CountDownLatch(1);
        CompletableFuture<Void> second = CompletableFuture.runAsync(() -> {
            try {
                fx.tm.begin();
                try (LeaseConnection c = fx.connection()) {
                    asking.countDown();
                    c.acquire("hot");
                    c.append(bytes("second"));
                }
                fx.tm.commit();
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        assertTrue(asking.await(5, TimeUnit.SECONDS));
        Thread.sleep(100);
        assertFalse(second.isDone(), "the second transaction waits for the lease");
        fx.tm.resume(first);
        fx.tm.commit();
        second.get(10, TimeUnit.SECONDS);
        List<Message> written = fx.messages();
        assertEquals(List.of("first", "second"), written.stream().map(AdapterTransactionTest::text).toList());
        assertTrue(written.get(1).timestamp().isAfter(written.get(0).timestamp()));
        assertTrue(written.get(1).leases().get(0).generation() > written.get(0).leases().get(0).generation());
    }

    @Test
    void namesATransactionAlreadyHoldsAreKeptNotTakenAgain() throws Exception {
        fx.tm.begin();
        Lease outer;
        Lease again;
        Lease overlapping;
        try (LeaseConnection c = fx.connection()) {
            outer = c.acquire("nest/a", "nest/b");
            c.append(bytes("outer"));
        }
        try (LeaseConnection c = fx.connection()) {
            again = c.acquire("nest/b");
            overlapping = c.acquire("nest/b", "nest/c");
            c.append(bytes("inner"));
            InvalidLeaseRequestException otherMode = assertThrows(InvalidLeaseRequestException.class,
                    () -> c.acquire(LeaseOptions.of("nest/a").mode(LeaseMode.SHARED)));
            assertTrue(otherMode.getMessage().contains("already holds 'nest/a'"), otherMode.getMessage());
        }
        fx.tm.commit();
        assertEquals(outer, again, "a name held already is answered with the lease that holds it");
        assertEquals(List.of("nest/c"), overlapping.names(), "only the new name is taken");
        List<Message> written = fx.messages();
        assertEquals(List.of("outer", "inner"), written.stream().map(AdapterTransactionTest::text).toList());
        assertEquals(written.get(0).timestamp(), written.get(1).timestamp(), "one transaction, one frame");
        Map<String, Long> stored = new HashMap<>();
        for (StampedLease l : written.get(0).leases()) {
            stored.put(l.name(), l.generation());
        }
        assertEquals(Map.of("nest/a", outer.grant("nest/a").generation(), "nest/b", outer.grant("nest/b").generation(),
                "nest/c", overlapping.grant("nest/c").generation()), stored);
    }

    @Test
    void anOlderTransactionBreaksTheTentativeLeaseOfAYoungerOneThatWaitsForIt() throws Exception {
        fx.tm.begin();
        Transaction older = fx.tm.getTransaction();
        try (LeaseConnection c = fx.connection()) {
            c.acquire("contested/a");
        }
        fx.tm.suspend();
        fx.time.advance(Duration.ofMillis(10));
        fx.tm.begin();
        Transaction younger = fx.tm.getTransaction();
        try (LeaseConnection c = fx.connection()) {
            c.acquire("contested/b");
            c.append(bytes("younger"));
        }
        fx.tm.suspend();
        // The younger one asks for the older one's name and waits for it, on a thread of its own; the older one then
        // asks for the younger one's: a cycle of waits, which the older one breaks.
        ExecutorService youngerThread = Executors.newSingleThreadExecutor();
        try {
            Future<Throwable> youngerCommit = youngerThread.submit(() -> {
                fx.tm.resume(younger);
                try (LeaseConnection c = fx.connection()) {
                    c.acquire("contested/a");
                }
                try {
                    fx.tm.commit();
                    return null;
                } catch (RollbackException e) {
                    return e;
                }
            });
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (fx.mcf.runtime().leases().inspect("contested/a", 1).get(0).waiters().isEmpty()) {
                assertTrue(System.nanoTime() < until, "the younger transaction never waited for contested/a");
                Thread.sleep(1);
            }
            fx.tm.resume(older);
            try (LeaseConnection c = fx.connection()) {
                c.acquire("contested/b");
                c.append(bytes("older"));
            }
            fx.tm.commit();
            Throwable rolledBack = youngerCommit.get(10, TimeUnit.SECONDS);
            assertTrue(rolledBack instanceof RollbackException, "the younger one rolls back: " + rolledBack);
            StringBuilder reasons = new StringBuilder();
            for (Throwable t = rolledBack; t != null; t = t.getCause()) {
                reasons.append(t).append(" / ");
                for (Throwable sup : t.getSuppressed()) {
                    reasons.append(sup).append(" / ");
                }
            }
            assertTrue(reasons.toString().contains("was broken at") && reasons.toString().contains("older requester"),
                    "the application is told why: " + reasons);
        } finally {
            youngerThread.shutdownNow();
        }
        assertEquals(List.of("older"), fx.messages().stream().map(AdapterTransactionTest::text).toList());
    }

    @Test
    void aYoungerTransactionWithTwoLeasesThatWaitsForNothingIsWaitedForNotBroken() throws Exception {
        fx.tm.begin();
        Transaction older = fx.tm.getTransaction();
        try (LeaseConnection c = fx.connection()) {
            c.acquire("two/a");
        }
        fx.tm.suspend();
        fx.time.advance(Duration.ofMillis(10));
        fx.tm.begin();
        Transaction younger = fx.tm.getTransaction();
        try (LeaseConnection c = fx.connection()) {
            c.acquire("two/b");
            c.acquire("two/c");
            c.append(bytes("younger"));
        }
        fx.tm.suspend();
        fx.tm.resume(older);
        try (LeaseConnection c = fx.connection()) {
            assertThrows(LeaseBusyException.class, () -> c.acquire(LeaseOptions.of("two/c").waitFor(Duration.ZERO)),
                    "the younger one waits for nothing: trying once, the older one is told the name is busy");
        }
        fx.tm.suspend();
        fx.tm.resume(younger);
        fx.tm.commit();
        assertEquals(List.of("younger"), fx.messages().stream().map(AdapterTransactionTest::text).toList());
        fx.tm.resume(older);
        fx.tm.rollback();
    }

    @Test
    void aYoungerTransactionWithOneLeaseIsWaitedForNotBroken() throws Exception {
        fx.tm.begin();
        Transaction older = fx.tm.getTransaction();
        try (LeaseConnection c = fx.connection()) {
            c.acquire("single/a");
        }
        fx.tm.suspend();
        fx.time.advance(Duration.ofMillis(10));
        fx.tm.begin();
        Transaction younger = fx.tm.getTransaction();
        try (LeaseConnection c = fx.connection()) {
            c.acquire("single/b");
            c.append(bytes("younger"));
        }
        fx.tm.suspend();
        fx.tm.resume(older);
        try (LeaseConnection c = fx.connection()) {
            // The younger one's only lease is not broken: trying once, the older one is told the name is busy.
            assertThrows(LeaseBusyException.class, () -> c.acquire(LeaseOptions.of("single/b").waitFor(Duration.ZERO)));
        }
        fx.tm.suspend();
        fx.tm.resume(younger);
        fx.tm.commit();
        fx.tm.resume(older);
        try (LeaseConnection c = fx.connection()) {
            c.acquire(LeaseOptions.of("single/b").waitFor(Duration.ZERO));
            c.append(bytes("older"));
        }
        fx.tm.commit();
        assertEquals(List.of("younger", "older"), fx.messages().stream().map(AdapterTransactionTest::text).toList());
    }

    @Test
    void localTransactionCommitsAndRollsBack() throws Exception {
        LeaseholdManagedConnection mc = (LeaseholdManagedConnection) fx.mcf.createManagedConnection(null, null);
        LeaseConnection c = (LeaseConnection) mc.getConnection(null, null);
        mc.getLocalTransaction().begin();
        assertEquals(LeaseKind.TENTATIVE, c.acquire("local").kind());
        c.append(bytes("local commit"));
        mc.getLocalTransaction().commit();
        mc.getLocalTransaction().begin();
        c.acquire("local");
        c.append(bytes("local rollback"));
        mc.getLocalTransaction().rollback();
        c.close();
        mc.destroy();
        assertEquals(List.of("local commit"), fx.messages().stream().map(AdapterTransactionTest::text).toList());
    }

    @Test
    void outsideATransactionLeasesAreFullAndAppendsImmediate() throws Exception {
        Instant last;
        try (LeaseConnection c = fx.connection()) {
            assertEquals(LeaseKind.FULL, c.acquire("auto").kind());
            c.append(bytes("now"));
            assertEquals(1, fx.messages().size(), "written at once");
            last = fx.messages().get(0).timestamp();
        }
        try (LeaseConnection c = fx.connection()) {
            assertEquals(last, c.acquire("auto").floor(), "closing released with the last timestamp");
        }
    }

    @Test
    void aHandleMovedToAnotherManagedConnectionTakesItsOwnUnitAlong() throws Exception {
        LeaseholdManagedConnection first = (LeaseholdManagedConnection) fx.mcf.createManagedConnection(null, null);
        LeaseholdManagedConnection second = (LeaseholdManagedConnection) fx.mcf.createManagedConnection(null, null);
        LeaseConnection c = (LeaseConnection) first.getConnection(null, null);
        Lease held = c.acquire("moved");
        second.associateConnection(c);
        first.cleanup();
        assertEquals(List.of(held), c.leases(), "the handle's own unit came along, with its lease");
        c.append(bytes("under the lease taken before the move"));
        c.close();
        assertEquals(1, fx.messages().size());
        try (LeaseConnection next = fx.connection()) {
            assertEquals(fx.messages().get(0).timestamp(), next.acquire("moved").floor(),
                    "closing on the second connection released the lease with the last timestamp");
        }
    }

    @Test
    void aLostLeaseMakesTheTransactionRollBackWithAClearException() throws Exception {
        fx.tm.begin();
        LeaseConnection c = fx.connection();
        c.acquire("lost");
        fx.context.refuseWork.set(true);
        fx.time.advance(Duration.ofSeconds(11));
        fx.context.drain();
        LeaseLostException e = assertThrows(LeaseLostException.class, () -> c.append(bytes("too late")));
        assertTrue(e.getMessage().contains("renewals in a row failed") || e.getMessage().contains("expired"),
                e.getMessage());
        assertEquals(jakarta.transaction.Status.STATUS_MARKED_ROLLBACK, fx.tm.getStatus());
        c.close();
        assertThrows(RollbackException.class, () -> fx.tm.commit());
        assertTrue(fx.messages().isEmpty());
    }

    @Test
    void renewalKeepsALongTransactionsLeases() throws Exception {
        fx.tm.begin();
        try (LeaseConnection c = fx.connection()) {
            c.acquire("long");
            for (int i = 0; i < 10; i++) {
                fx.time.advance(Duration.ofSeconds(2));
                fx.context.drain();
            }
            c.append(bytes("after 20 s"));
        }
        fx.tm.commit();
        assertEquals(1, fx.messages().size());
        assertTrue(fx.rm().metrics().getRenewals() >= 5);
    }

    // ------------------------------------------------------------------------------------------------ direct XA

    private static Xid xid(int n) {
        return new XidKey(4242, ("gtrid-" + n).getBytes(StandardCharsets.UTF_8), new byte[] {1});
    }

    private XAResource branch(Xid xid, String name, String payload) throws Exception {
        LeaseholdManagedConnection mc = (LeaseholdManagedConnection) fx.mcf.createManagedConnection(null, null);
        XAResource xa = mc.getXAResource();
        xa.start(xid, XAResource.TMNOFLAGS);
        LeaseConnection c = (LeaseConnection) mc.getConnection(null, null);
        c.acquire(name);
        c.append(bytes(payload));
        c.close();
        xa.end(xid, XAResource.TMSUCCESS);
        return xa;
    }

    @Test
    void aLeaseLostBetweenPrepareAndCommitIsAHeuristicRollbackNeverAWrite() throws Exception {
        Xid x = xid(1);
        XAResource xa = branch(x, "paused", "after a pause");
        assertEquals(XAResource.XA_OK, xa.prepare(x));
        fx.context.refuseWork.set(true);
        fx.time.advance(Duration.ofSeconds(11));
        XAException e = assertThrows(XAException.class, () -> xa.commit(x, false));
        assertEquals(XAException.XA_HEURRB, e.errorCode);
        assertTrue(fx.messages().isEmpty(), "nothing written");
        assertArrayEquals(new Xid[] {x}, xa.recover(XAResource.TMSTARTRSCAN), "reported until forgotten");
        xa.forget(x);
        assertEquals(0, xa.recover(XAResource.TMSTARTRSCAN).length);
        assertEquals(1, fx.rm().metrics().getHeuristicRollbacks());
    }

    @Test
    void embeddedRecoveryAfterACrashBetweenPrepareAndCommitCommitsUnderTheSameLease() throws Exception {
        Xid x = xid(2);
        XAResource xa = branch(x, "crash", "prepared then crashed");
        assertEquals(XAResource.XA_OK, xa.prepare(x));
        long generation = fx.rm().journalEntry(XidKey.of(x)).leases().get(0).generation();
        fx.restart();
        XAResource recovered = ((LeaseholdManagedConnection) fx.mcf.createManagedConnection(null, null))
                .getXAResource();
        // Held again from the start, renewed while the transaction manager takes its time, and nobody else's.
        for (int i = 0; i < 10; i++) {
            fx.time.advance(Duration.ofSeconds(2));
            fx.context.drain();
        }
        LeaseBusyException busy = assertThrows(LeaseBusyException.class, () -> fx.mcf.runtime().leases().acquire(
                LeaseRequest.builder(new HolderId("intruder", "t"), "crash").waitFor(Duration.ZERO).build()));
        assertTrue(busy.getMessage().contains("crash"), busy.getMessage());
        assertEquals(1, fx.rm().metrics().getPreparedBranches().length);
        assertTrue(fx.rm().metrics().getPreparedBranches()[0].contains("held again"),
                fx.rm().metrics().getPreparedBranches()[0]);
        assertArrayEquals(new Xid[] {x}, recovered.recover(XAResource.TMSTARTRSCAN | XAResource.TMENDRSCAN));
        recovered.commit(x, false);
        List<Message> written = fx.messages();
        assertEquals(List.of("prepared then crashed"), written.stream().map(AdapterTransactionTest::text).toList());
        assertEquals(List.of("crash@" + generation), nameAndGeneration(written.get(0)),
                "written under the generation the branch prepared with");
        assertWitnesses(written.get(0));
        assertEquals(0, recovered.recover(XAResource.TMSTARTRSCAN).length, "decided");
        assertEquals(0, fx.rm().metrics().getHeuristicRollbacks());
        try (LeaseConnection c = fx.connection()) {
            Lease next = c.acquire("crash");
            assertEquals(written.get(0).timestamp(), next.floor(), "released with the frame's timestamp");
            assertTrue(next.grant("crash").generation() > generation);
        }
    }

    @Test
    void embeddedRecoveryRollsBackAReinstatedBranchWhenTheTransactionManagerSaysSo() throws Exception {
        Xid x = xid(5);
        XAResource xa = branch(x, "undo", "never");
        assertEquals(XAResource.XA_OK, xa.prepare(x));
        fx.restart();
        XAResource recovered = ((LeaseholdManagedConnection) fx.mcf.createManagedConnection(null, null))
                .getXAResource();
        assertEquals(1, fx.mcf.runtime().leases().inspect("undo", 10).get(0).holders().size(), "held again");
        recovered.rollback(x);
        assertTrue(fx.messages().isEmpty());
        assertEquals(0, recovered.recover(XAResource.TMSTARTRSCAN).length);
        assertEquals(List.of(), fx.mcf.runtime().leases().inspect("undo", 10).get(0).holders(),
                "released at the rollback");
    }

    @Test
    void afterTheInDoubtHoldRecoveryRollsBackHeuristicallyAndSaysSoOnce() throws Exception {
        fx.close();
        fx = new AdapterFixture("tx", mcf -> mcf.setInDoubtHoldMillis(20_000L));
        Xid x = xid(6);
        XAResource xa = branch(x, "late", "decided too late");
        assertEquals(XAResource.XA_OK, xa.prepare(x));
        fx.restart();
        XAResource recovered = ((LeaseholdManagedConnection) fx.mcf.createManagedConnection(null, null))
                .getXAResource();
        for (int i = 0; i < 11; i++) {
            fx.time.advance(Duration.ofSeconds(2));
            fx.context.drain();
        }
        assertTrue(fx.rm().metrics().getPreparedBranches()[0].contains("not held by this server"),
                fx.rm().metrics().getPreparedBranches()[0]);
        try (LeaseConnection c = fx.connection()) {
            c.acquire("late"); // free again: the window has passed
        }
        List<String> logged = new ArrayList<>();
        java.util.logging.Logger jul = java.util.logging.Logger.getLogger(ResourceManager.class.getName());
        java.util.logging.Handler capture = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord r) {
                logged.add(r.getMessage());
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        java.util.logging.Level level = jul.getLevel();
        jul.setLevel(java.util.logging.Level.INFO);
        jul.addHandler(capture);
        try {
            assertArrayEquals(new Xid[] {x}, recovered.recover(XAResource.TMSTARTRSCAN));
            XAException e = assertThrows(XAException.class, () -> recovered.commit(x, false));
            assertEquals(XAException.XA_HEURRB, e.errorCode);
            assertTrue(fx.messages().isEmpty());
            for (int pass = 0; pass < 3; pass++) {
                assertArrayEquals(new Xid[] {x}, recovered.recover(XAResource.TMSTARTRSCAN), "reported until forgotten");
            }
            assertEquals(1, fx.rm().metrics().getHeuristicBranches().length);
            assertTrue(fx.rm().metrics().getHeuristicBranches()[0].contains("heuristic rollback"),
                    fx.rm().metrics().getHeuristicBranches()[0]);
            recovered.forget(x);
            assertEquals(0, recovered.recover(XAResource.TMSTARTRSCAN).length);
            assertEquals(0, fx.rm().metrics().getHeuristicBranches().length);
        } finally {
            jul.removeHandler(capture);
            jul.setLevel(level);
        }
        assertEquals(1, logged.stream().filter(m -> m.startsWith("LEASEHOLD-4211")).count(), logged.toString());
        assertEquals(1, logged.stream().filter(m -> m.startsWith("LEASEHOLD-4202")).count(), logged.toString());
        assertEquals(0, logged.stream().filter(m -> m.startsWith("LEASEHOLD-4204")).count(),
                "the heuristic outcome is reported once, when it was decided, not at every recovery pass: " + logged);
    }

    /**
     * Prepares a branch, then crashes after its commit's write but before the outcome reached the journal: writes the
     * frame the commit would have written (its lease stamps and payloads, from the journal) and restarts without an
     * outcome. Returns an XAResource of the restarted adapter.
     */
    private XAResource crashAfterTheCommitsWrite(Xid x, String name, String payload) throws Exception {
        XAResource xa = branch(x, name, payload);
        assertEquals(XAResource.XA_OK, xa.prepare(x));
        PrepareJournal.Entry entry = fx.rm().journalEntry(XidKey.of(x));
        fx.mcf.runtime().store().append(new org.leasehold.bag.AppendRequest("ledger", entry.leases(), null,
                entry.payloads()));
        fx.restart();
        return ((LeaseholdManagedConnection) fx.mcf.createManagedConnection(null, null)).getXAResource();
    }

    @Test
    void recoveryOfABranchThatHadWrittenCommitsItOnceNeverTwice() throws Exception {
        Xid x = xid(3);
        XAResource recovered = crashAfterTheCommitsWrite(x, "written", "written before the crash");
        assertArrayEquals(new Xid[] {x}, recovered.recover(XAResource.TMSTARTRSCAN));
        recovered.commit(x, false);
        assertEquals(List.of("written before the crash"), fx.messages().stream().map(AdapterTransactionTest::text)
                .toList(), "exactly once");
        assertEquals(0, recovered.recover(XAResource.TMSTARTRSCAN).length);
    }

    @Test
    void rollingBackARecoveredBranchThatHadWrittenReportsAHeuristicCommit() throws Exception {
        Xid x = xid(4);
        XAResource recovered = crashAfterTheCommitsWrite(x, "hc", "already out");
        XAException e = assertThrows(XAException.class, () -> recovered.rollback(x));
        assertEquals(XAException.XA_HEURCOM, e.errorCode);
        recovered.forget(x);
        assertEquals(1, fx.messages().size());
    }

    @Test
    void aHeuristicOutcomeReachesTheApplication() throws Exception {
        // Between our prepare and our commit, the server "pauses" past our lease's deadline: the second resource
        // moves the clock at whichever of its own steps falls in that window.
        OtherResource pauser = new OtherResource() {
            private boolean paused;

            private void pauseIfBetween() {
                try {
                    if (!paused && fx.rm().metrics().getPrepares() == 1 && fx.rm().metrics().getCommits() == 0) {
                        paused = true;
                        fx.time.advance(Duration.ofSeconds(11));
                    }
                } catch (jakarta.resource.ResourceException e) {
                    throw new IllegalStateException(e);
                }
            }

            @Override
            public int prepare(Xid xid) throws XAException {
                pauseIfBetween();
                return super.prepare(xid);
            }

            @Override
            public void commit(Xid xid, boolean onePhase) {
                pauseIfBetween();
                super.commit(xid, onePhase);
            }
        };
        fx.tm.begin();
        fx.tm.getTransaction().enlistResource(pauser);
        try (LeaseConnection c = fx.connection()) {
            c.acquire("heur");
            c.append(bytes("x"));
        }
        fx.context.refuseWork.set(true);
        Exception e = assertThrows(Exception.class, () -> fx.tm.commit());
        assertTrue(e instanceof HeuristicMixedException || e instanceof HeuristicRollbackException, e + " calls "
                + pauser.calls + " prepares " + fx.rm().metrics().getPrepares() + " commits "
                + fx.rm().metrics().getCommits() + " rollbacks " + fx.rm().metrics().getRollbacks());
        assertEquals(List.of("start", "end", "prepare", "commit"), pauser.calls, "the other resource committed");
        assertTrue(fx.messages().isEmpty(), "never a write after the lease ended");
        assertEquals(1, fx.rm().metrics().getHeuristicRollbacks());
    }

    private static List<String> nameAndGeneration(Message m) {
        return m.leases().stream().map(l -> l.name() + "@" + l.generation()).toList();
    }

    /**
     * Every lease of {@code m} carries the frame witness of its grant, with a signed time of the commit: its own if it
     * is recent, else one attached (within the 200 ms a signed time is reused of the message's timestamp).
     */
    private static void assertWitnesses(Message m) throws Exception {
        for (StampedLease l : m.leases()) {
            org.leasehold.audit.FrameWitness fw = org.leasehold.audit.FrameWitness.decode(l.witness());
            assertEquals(l.name(), fw.witness().name());
            assertEquals(l.generation(), fw.witness().generation());
            long off = Math.abs(org.leasehold.time.Micros.of(m.timestamp()) - fw.latestSignedTime());
            assertTrue(off < SignedTimes.REUSE_MICROS, "a signed time of the commit: " + off + " µs off, " + fw);
            assertEquals(fw.time() != null, fw.witness().signedTime() < fw.latestSignedTime(),
                    "a signed time is attached only when it is later than the witness's own: " + fw);
        }
    }
}
