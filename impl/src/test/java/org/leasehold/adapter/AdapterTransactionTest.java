package org.leasehold.adapter;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
import org.leasehold.bag.StampedLease;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.connector.LeaseOptions;
import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseLostException;
import org.leasehold.lease.LeaseMode;

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
        assertEquals(List.of(new StampedLease("account/1", lease.grant("account/1").generation(), null),
                new StampedLease("account/2", lease.grant("account/2").generation(), null)), m.leases());
        assertTrue(m.timestamp().isAfter(lease.floor()) && m.timestamp().isBefore(lease.deadline()));
        try (LeaseConnection c = fx.connection()) {
            Lease next = c.acquire("account/1");
            assertEquals(m.timestamp(), next.floor(), "released with the commit's timestamp as watermark");
        }
        assertTrue(fx.rm().recover(XAResource.TMSTARTRSCAN).length == 0, "no branch left in doubt");
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
    void anOlderTransactionBreaksAYoungerOnesTentativeLease() throws Exception {
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
        fx.tm.resume(older);
        try (LeaseConnection c = fx.connection()) {
            c.acquire("contested/b");
            c.append(bytes("older"));
        }
        fx.tm.commit();
        fx.tm.resume(younger);
        assertThrows(RollbackException.class, () -> fx.tm.commit(), "the younger one's prepare votes rollback");
        assertEquals(List.of("older"), fx.messages().stream().map(AdapterTransactionTest::text).toList());
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
    void recoveryAfterACrashBetweenPrepareAndCommitRollsBackHeuristically() throws Exception {
        Xid x = xid(2);
        XAResource xa = branch(x, "crash", "prepared then crashed");
        assertEquals(XAResource.XA_OK, xa.prepare(x));
        fx.restart();
        fx.time.advance(Duration.ofSeconds(20));
        LeaseholdManagedConnection mc = (LeaseholdManagedConnection) fx.mcf.createManagedConnection(null, null);
        XAResource recovered = mc.getXAResource();
        assertArrayEquals(new Xid[] {x}, recovered.recover(XAResource.TMSTARTRSCAN | XAResource.TMENDRSCAN));
        XAException e = assertThrows(XAException.class, () -> recovered.commit(x, false));
        assertEquals(XAException.XA_HEURRB, e.errorCode);
        assertTrue(fx.messages().isEmpty());
        recovered.forget(x);
        assertEquals(0, recovered.recover(XAResource.TMSTARTRSCAN).length);
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
}
