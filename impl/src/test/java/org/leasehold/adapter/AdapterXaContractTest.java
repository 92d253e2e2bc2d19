package org.leasehold.adapter;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

import javax.transaction.xa.XAException;
import javax.transaction.xa.XAResource;
import javax.transaction.xa.Xid;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.leasehold.bag.Message;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseRequest;

/**
 * The XA contract as a transaction manager sees it, called directly on the adapter's {@link XAResource}: the return
 * value or error code of each call in each state of a branch, what each leaves in the log, the journal and the lease
 * service, and what a recovery scan reports.
 */
class AdapterXaContractTest {
    private AdapterFixture fx;
    /** The lease {@link #branch} took last. */
    private Lease lastLease;

    @BeforeEach
    void start() throws Exception {
        fx = new AdapterFixture("xa", mcf -> { });
    }

    @AfterEach
    void stop() {
        fx.close();
    }

    private static Xid xid(int n) {
        return new XidKey(4243, ("xa-" + n).getBytes(StandardCharsets.UTF_8), new byte[] {7});
    }

    private XAResource resource() throws Exception {
        return ((LeaseholdManagedConnection) fx.mcf.createManagedConnection(null, null)).getXAResource();
    }

    /** Starts branch {@code xid}, takes {@code name}, appends {@code payload} unless null, and ends the branch. */
    private XAResource branch(Xid xid, String name, String payload) throws Exception {
        LeaseholdManagedConnection mc = (LeaseholdManagedConnection) fx.mcf.createManagedConnection(null, null);
        XAResource xa = mc.getXAResource();
        xa.start(xid, XAResource.TMNOFLAGS);
        LeaseConnection c = (LeaseConnection) mc.getConnection(null, null);
        lastLease = c.acquire(name);
        if (payload != null) {
            c.append(payload.getBytes(StandardCharsets.UTF_8));
        }
        c.close();
        xa.end(xid, XAResource.TMSUCCESS);
        return xa;
    }

    private static XAException fails(int code, Executable call) {
        XAException e = assertThrows(XAException.class, call);
        assertEquals(code, e.errorCode, e.getMessage());
        return e;
    }

    /** Whether another holder can take {@code name} at once. */
    private boolean free(String name) throws Exception {
        org.leasehold.lease.LeaseService leases = fx.mcf.runtime().leases();
        try {
            Lease l = leases.acquire(LeaseRequest.builder(new HolderId("other-server", "probe"), name)
                    .waitFor(Duration.ZERO).build());
            leases.release(l, null, null);
            return true;
        } catch (LeaseBusyException e) {
            return false;
        }
    }

    private List<String> texts() throws Exception {
        return fx.messages().stream().map(m -> new String(m.payload(), StandardCharsets.UTF_8)).toList();
    }

    /** Makes the unit of the branch on {@code name} lose its lease: renewals refused past its deadline. */
    private void loseLeases() throws Exception {
        fx.context.refuseWork.set(true);
        fx.time.advance(Duration.ofSeconds(11));
        fx.context.drain();
        fx.context.refuseWork.set(false);
    }

    @Test
    void everyCallOnABranchNobodyKnowsIsNota() throws Exception {
        XAResource xa = resource();
        Xid x = xid(1);
        assertTrue(fails(XAException.XAER_NOTA, () -> xa.prepare(x)).getMessage().contains("is not known"));
        assertTrue(fails(XAException.XAER_NOTA, () -> xa.commit(x, true)).getMessage()
                .startsWith("one-phase commit of unknown branch"));
        assertTrue(fails(XAException.XAER_NOTA, () -> xa.commit(x, false)).getMessage().startsWith("commit of "));
        assertTrue(fails(XAException.XAER_NOTA, () -> xa.rollback(x)).getMessage().startsWith("rollback of "));
        assertTrue(fails(XAException.XAER_NOTA, () -> xa.forget(x)).getMessage().contains("no heuristic outcome"));
    }

    @Test
    void aBranchIsStartedOnceAndJoinedOnlyWhileKnown() throws Exception {
        Xid x = xid(18);
        XAResource xa = resource();
        xa.start(x, XAResource.TMNOFLAGS);
        xa.end(x, XAResource.TMSUCCESS);
        XAException dup = fails(XAException.XAER_DUPID, () -> resource().start(x, XAResource.TMNOFLAGS));
        assertTrue(dup.getMessage().contains("already known"), dup.getMessage());
        LeaseholdManagedConnection mc = (LeaseholdManagedConnection) fx.mcf.createManagedConnection(null, null);
        XAResource joined = mc.getXAResource();
        joined.start(x, XAResource.TMJOIN);
        LeaseConnection c = (LeaseConnection) mc.getConnection(null, null);
        c.acquire("joined");
        c.close();
        joined.end(x, XAResource.TMFAIL);
        XAException vote = fails(XAException.XA_RBROLLBACK, () -> xa.prepare(x));
        assertTrue(vote.getMessage().contains("TMFAIL"), vote.getMessage());
        assertTrue(free("joined"), "the vote released the branch's lease");
        fails(XAException.XAER_NOTA, () -> resource().start(x, XAResource.TMJOIN));
    }

    @Test
    void aCommitBeforeThePrepareIsAProtocolErrorThatLeavesTheBranchAsItWas() throws Exception {
        Xid x = xid(2);
        XAResource xa = branch(x, "proto", "kept for later");
        XAException e = fails(XAException.XAER_PROTO, () -> xa.commit(x, false));
        assertTrue(e.getMessage().contains("before prepare"), e.getMessage());
        assertTrue(fx.messages().isEmpty());
        assertFalse(free("proto"), "the branch still holds its lease");
        assertEquals(XAResource.XA_OK, xa.prepare(x));
        xa.commit(x, false);
        assertEquals(List.of("kept for later"), texts());
    }

    @Test
    void aBranchThatWroteNothingPreparesReadOnlyAndIsOverThen() throws Exception {
        Xid x = xid(3);
        XAResource xa = branch(x, "ro", null);
        assertEquals(XAResource.XA_RDONLY, xa.prepare(x));
        assertTrue(free("ro"), "released at the prepare: no second phase comes");
        assertEquals(1, fx.rm().metrics().getReadOnlyBranches());
        assertNull(fx.rm().journalEntry(XidKey.of(x)), "nothing journaled");
        assertEquals(0, xa.recover(XAResource.TMSTARTRSCAN).length);
        fails(XAException.XAER_NOTA, () -> xa.commit(x, false));
        fails(XAException.XAER_NOTA, () -> xa.prepare(x));
    }

    @Test
    void aOnePhaseCommitWritesOnceWithoutTheJournalAndReleasesWithTheFramesTimestamp() throws Exception {
        Xid x = xid(4);
        XAResource xa = branch(x, "one", "one phase");
        xa.commit(x, true);
        List<Message> written = fx.messages();
        assertEquals(List.of("one phase"), texts());
        assertNull(fx.rm().journalEntry(XidKey.of(x)));
        assertEquals(1, fx.rm().metrics().getOnePhaseCommits());
        assertEquals(0, fx.rm().metrics().getTwoPhaseCommits());
        fails(XAException.XAER_NOTA, () -> xa.commit(x, true));
        try (LeaseConnection c = fx.connection()) {
            Lease next = c.acquire("one");
            assertEquals(written.get(0).timestamp(), next.floor());
            org.leasehold.lease.Predecessor before = next.grant("one").predecessor();
            assertEquals(written.get(0).timestamp(), before.watermark());
            assertEquals("log=ledger", before.metadata(), "the release names the log the watermark is of");
        }
    }

    @Test
    void aOnePhaseCommitOfABranchThatWroteNothingReleasesItsLeases() throws Exception {
        Xid x = xid(5);
        XAResource xa = branch(x, "one-ro", null);
        xa.commit(x, true);
        assertTrue(fx.messages().isEmpty());
        assertEquals(1, fx.rm().metrics().getReadOnlyBranches());
        assertEquals(0, fx.rm().metrics().getOnePhaseCommits());
        assertTrue(free("one-ro"));
        fails(XAException.XAER_NOTA, () -> xa.rollback(x));
    }

    @Test
    void aPrepareRecordsTheBranchAndItsCommitResolvesIt() throws Exception {
        Xid x = xid(6);
        XAResource xa = branch(x, "two", "two phases");
        fx.time.advance(Duration.ofMillis(3));
        assertEquals(XAResource.XA_OK, xa.prepare(x));
        PrepareJournal.Entry e = fx.rm().journalEntry(XidKey.of(x));
        assertEquals(PrepareJournal.Type.PREPARED, e.state());
        assertEquals(fx.time.now(), e.preparedAt());
        assertEquals("two", e.leases().get(0).name());
        assertEquals("two phases", new String(e.payloads().get(0), StandardCharsets.UTF_8));
        assertEquals(0, xa.recover(XAResource.TMSTARTRSCAN).length, "a branch of this run awaiting its commit");
        assertArrayEquals(new String[] {XidKey.of(x) + " prepared at " + fx.time.now()},
                fx.rm().metrics().getPreparedBranches(), "a branch of this run: no more said");
        assertEquals(0, fx.rm().metrics().getHeuristicBranches().length);
        xa.commit(x, false);
        assertNull(fx.rm().journalEntry(XidKey.of(x)), "resolved");
        assertEquals(List.of("two phases"), texts());
        assertEquals(1, fx.rm().metrics().getTwoPhaseCommits());
        assertEquals(0, fx.rm().metrics().getOnePhaseCommits());
        fails(XAException.XAER_NOTA, () -> xa.rollback(x));
        fails(XAException.XAER_NOTA, () -> xa.commit(x, false));
    }

    @Test
    void aRollbackReleasesWithoutWritingAndResolvesAPreparedBranch() throws Exception {
        Xid active = xid(7);
        XAResource xa = branch(active, "rb/active", "never");
        xa.rollback(active);
        try (LeaseConnection c = fx.connection()) {
            org.leasehold.lease.Predecessor before = c.acquire("rb/active").grant("rb/active").predecessor();
            assertNull(before.watermark(), "released without a watermark");
            assertNull(before.metadata());
        }
        Xid prepared = xid(8);
        XAResource xb = branch(prepared, "rb/prepared", "never either");
        assertEquals(XAResource.XA_OK, xb.prepare(prepared));
        xb.rollback(prepared);
        fails(XAException.XAER_NOTA, () -> xa.rollback(active));
        fails(XAException.XAER_NOTA, () -> xb.rollback(prepared));
        fails(XAException.XAER_NOTA, () -> xb.prepare(prepared));
        assertTrue(free("rb/prepared"));
        assertNull(fx.rm().journalEntry(XidKey.of(prepared)), "resolved in the journal");
        assertEquals(2, fx.rm().metrics().getRollbacks());
        assertTrue(fx.messages().isEmpty());
        fx.restart();
        assertEquals(0, resource().recover(XAResource.TMSTARTRSCAN).length, "nothing for recovery after a restart");
    }

    @Test
    void aRecoveryScanAnswersOnlyAtItsStart() throws Exception {
        Xid x = xid(9);
        XAResource xa = branch(x, "scan", "in doubt");
        assertEquals(XAResource.XA_OK, xa.prepare(x));
        fx.restart();
        XAResource recovered = resource();
        assertEquals(0, recovered.recover(XAResource.TMNOFLAGS).length, "a scan goes on: nothing more");
        assertEquals(0, recovered.recover(XAResource.TMENDRSCAN).length);
        assertArrayEquals(new Xid[] {x}, recovered.recover(XAResource.TMSTARTRSCAN));
        assertArrayEquals(new Xid[] {x}, recovered.recover(XAResource.TMSTARTRSCAN | XAResource.TMENDRSCAN));
        recovered.rollback(x);
        assertEquals(0, recovered.recover(XAResource.TMSTARTRSCAN).length);
        assertEquals(List.of(), fx.mcf.runtime().leases().inspect("scan", 10).get(0).holders(), "released");
        assertTrue(fx.messages().isEmpty());
    }

    @Test
    void aLeaseLostBeforeThePrepareVotesRollback() throws Exception {
        Xid x = xid(10);
        XAResource xa = branch(x, "lost/prepare", "too late");
        loseLeases();
        XAException e = fails(XAException.XA_RBROLLBACK, () -> xa.prepare(x));
        assertTrue(e.getMessage().contains("lost a lease before prepare"), e.getMessage());
        assertNull(fx.rm().journalEntry(XidKey.of(x)));
        fails(XAException.XAER_NOTA, () -> xa.rollback(x));
        assertTrue(fx.messages().isEmpty());
    }

    @Test
    void aLeaseLostBeforeAOnePhaseCommitRollsItBack() throws Exception {
        Xid x = xid(11);
        XAResource xa = branch(x, "lost/one", "too late");
        loseLeases();
        XAException e = fails(XAException.XA_RBROLLBACK, () -> xa.commit(x, true));
        assertTrue(e.getMessage().contains("lost a lease"), e.getMessage());
        fails(XAException.XAER_NOTA, () -> xa.commit(x, true));
        assertTrue(fx.messages().isEmpty());
    }

    @Test
    void aHeuristicOutcomeIsReportedAgainAtEveryDecisionUntilForgotten() throws Exception {
        fx.close();
        fx = new AdapterFixture("xa", mcf -> mcf.setInDoubtHoldMillis(20_000L));
        Xid x = xid(12);
        XAResource xa = branch(x, "heur", "never");
        assertEquals(XAResource.XA_OK, xa.prepare(x));
        java.time.Instant preparedAt = fx.time.now();
        fx.restart();
        XAResource recovered = resource();
        for (int i = 0; i < 11; i++) {
            fx.time.advance(Duration.ofSeconds(2));
            fx.context.drain();
        }
        XAException first = fails(XAException.XA_HEURRB, () -> recovered.commit(x, false));
        assertTrue(first.getMessage().contains("heuristic rollback of recovered branch")
                && !first.getMessage().contains("recorded no lease"), first.getMessage());
        assertEquals(1, fx.rm().metrics().getHeuristicRollbacks());
        XAException again = fails(XAException.XA_HEURRB, () -> recovered.commit(x, false));
        assertTrue(again.getMessage().contains("already rolled back heuristically"), again.getMessage());
        assertArrayEquals(new Xid[] {x}, recovered.recover(XAResource.TMSTARTRSCAN));
        assertArrayEquals(new String[] {XidKey.of(x) + " heuristic rollback (prepared at " + preparedAt + ")"},
                fx.rm().metrics().getHeuristicBranches());
        assertEquals(0, fx.rm().metrics().getPreparedBranches().length);
        fx.restart();
        XAResource later = resource();
        assertArrayEquals(new Xid[] {x}, later.recover(XAResource.TMSTARTRSCAN), "still reported after a restart");
        assertTrue(fx.mcf.runtime().leases().inspect("heur", 10).stream().allMatch(i -> i.holders().isEmpty()),
                "a branch decided heuristically does not hold its leases again");
        fails(XAException.XA_HEURRB, () -> later.commit(x, false));
        later.forget(x);
        fails(XAException.XAER_NOTA, () -> later.forget(x));
        fails(XAException.XAER_NOTA, () -> later.commit(x, false));
        assertTrue(fx.messages().isEmpty());
    }

    @Test
    void aHeuristicCommitIsReportedToALaterCommitToo() throws Exception {
        Xid x = xid(13);
        XAResource xa = branch(x, "hc", "out before the crash");
        assertEquals(XAResource.XA_OK, xa.prepare(x));
        PrepareJournal.Entry entry = fx.rm().journalEntry(XidKey.of(x));
        fx.mcf.runtime().store().append(new org.leasehold.bag.AppendRequest("ledger", entry.leases(), null,
                entry.payloads()));
        fx.restart();
        XAResource recovered = resource();
        fails(XAException.XA_HEURCOM, () -> recovered.rollback(x));
        assertEquals(1, fx.rm().metrics().getHeuristicCommits());
        XAException again = fails(XAException.XA_HEURCOM, () -> recovered.commit(x, false));
        assertTrue(again.getMessage().contains("already committed heuristically"), again.getMessage());
        assertTrue(fx.rm().metrics().getHeuristicBranches()[0].contains("heuristic commit"),
                fx.rm().metrics().getHeuristicBranches()[0]);
        recovered.forget(x);
        assertEquals(0, recovered.recover(XAResource.TMSTARTRSCAN).length);
        assertEquals(1, fx.messages().size());
    }

    @Test
    void aPreparedBranchOfAnEarlierRunRolledBackAfterTheHoldIsResolved() throws Exception {
        fx.close();
        fx = new AdapterFixture("xa", mcf -> mcf.setInDoubtHoldMillis(20_000L));
        Xid x = xid(14);
        XAResource xa = branch(x, "late-rb", "never");
        assertEquals(XAResource.XA_OK, xa.prepare(x));
        fx.restart();
        XAResource recovered = resource();
        for (int i = 0; i < 11; i++) {
            fx.time.advance(Duration.ofSeconds(2));
            fx.context.drain();
        }
        assertTrue(fx.rm().metrics().getPreparedBranches()[0].contains("not held by this server"),
                fx.rm().metrics().getPreparedBranches()[0]);
        recovered.rollback(x);
        assertNull(fx.rm().journalEntry(XidKey.of(x)));
        assertEquals(0, recovered.recover(XAResource.TMSTARTRSCAN).length);
        assertTrue(free("late-rb"));
    }

    @Test
    void aPrepareRenewsALeaseWithLessThanTheMinimumTimeLeftNotOneWithExactlyIt() throws Exception {
        fx.close();
        fx = new AdapterFixture("xa", mcf -> mcf.setMinTimeLeftAtPrepareMillis(5_000L));
        Xid edge = xid(15);
        XAResource xa = branch(edge, "renew/edge", "exactly the minimum left");
        java.time.Instant edgeDeadline = lastLease.deadline();
        fx.context.refuseWork.set(true); // no renewal by the keeper meanwhile
        fx.time.advance(Duration.between(fx.time.now(), edgeDeadline.minusMillis(5_000)));
        fx.context.refuseWork.set(false);
        assertEquals(XAResource.XA_OK, xa.prepare(edge));
        assertEquals(edgeDeadline, fx.rm().journalEntry(XidKey.of(edge)).leases().get(0).deadline(),
                "5000 ms left of 5000: not renewed");
        xa.rollback(edge);
        Xid shortOne = xid(16);
        XAResource xb = branch(shortOne, "renew/short", "less than the minimum left");
        java.time.Instant shortDeadline = lastLease.deadline();
        fx.context.refuseWork.set(true);
        fx.time.advance(Duration.between(fx.time.now(), shortDeadline.minusMillis(4_999)));
        fx.context.refuseWork.set(false);
        assertEquals(XAResource.XA_OK, xb.prepare(shortOne));
        assertEquals(fx.time.now().plusMillis(10_000), fx.rm().journalEntry(XidKey.of(shortOne)).leases().get(0)
                .deadline(), "4999 ms left of 5000: renewed for MaxLeaseMillis at the prepare");
        xb.commit(shortOne, false);
        assertEquals(List.of("less than the minimum left"), texts());
    }

    @Test
    void aTransactionThatDoesNotCompleteWithinTheInDoubtHoldHasItsLeasesReleasedThen() throws Exception {
        List<String> seen = new java.util.ArrayList<>();
        AdapterTransactionTest.OtherResource slow = new AdapterTransactionTest.OtherResource() {
            @Override
            public void commit(Xid xid, boolean onePhase) {
                super.commit(xid, onePhase);
                try {
                    // Our branch has committed; this resource takes InDoubtHoldMillis (20 s, twice MaxLeaseMillis:
                    // the leases are renewed meanwhile) and more to commit.
                    for (int i = 0; i < 8; i++) {
                        fx.time.advance(Duration.ofMillis(2_450));
                        fx.context.drain();
                    }
                    seen.add(free("slow") ? "free" : "busy");
                    fx.time.advance(Duration.ofMillis(400));
                    fx.context.drain();
                    seen.add(free("slow") ? "free" : "busy");
                } catch (Exception e) {
                    seen.add(e.toString());
                }
            }
        };
        fx.close();
        fx = new AdapterFixture("xa", mcf -> mcf.setInDoubtHoldMillis(20_000L));
        fx.tm.begin();
        try (LeaseConnection c = fx.connection()) {
            c.acquire("slow");
            c.append("held past our commit".getBytes(StandardCharsets.UTF_8));
        }
        fx.tm.getTransaction().enlistResource(slow);
        fx.tm.commit();
        assertEquals(List.of("busy", "free"), seen, "held 19.6 s after our branch's commit, released at 20 s");
        try (LeaseConnection c = fx.connection()) {
            assertEquals(fx.messages().get(0).timestamp(), c.acquire("slow").floor(),
                    "released with the frame's timestamp as watermark");
        }
    }

    @Test
    void aLeaseThatEndedBetweenPrepareAndCommitIsAHeuristicRollbackSaidAsSuch() throws Exception {
        Xid x = xid(19);
        XAResource xa = branch(x, "ended", "never");
        assertEquals(XAResource.XA_OK, xa.prepare(x));
        fx.context.refuseWork.set(true);
        fx.time.advance(Duration.ofSeconds(11));
        XAException e = fails(XAException.XA_HEURRB, () -> xa.commit(x, false));
        assertTrue(e.getMessage().startsWith("heuristic rollback of ") && e.getMessage().endsWith("; nothing was written")
                && !e.getMessage().contains("bag store refused"), "decided before any write: " + e.getMessage());
        assertTrue(e.getMessage().contains("renewals in a row failed"), "with the reason the lease was lost: "
                + e.getMessage());
        assertEquals(PrepareJournal.Type.HEURISTIC_ROLLBACK, fx.rm().journalEntry(XidKey.of(x)).state());
        assertEquals(0, fx.rm().metrics().getTwoPhaseCommits());
        assertTrue(fx.messages().isEmpty());
    }

    @Test
    void aRecoveredBranchWhoseFrameWasWrittenCommitsOnceAndCountsAsACommit() throws Exception {
        Xid x = xid(20);
        XAResource xa = branch(x, "counted", "written before the crash");
        assertEquals(XAResource.XA_OK, xa.prepare(x));
        PrepareJournal.Entry entry = fx.rm().journalEntry(XidKey.of(x));
        fx.mcf.runtime().store().append(new org.leasehold.bag.AppendRequest("ledger", entry.leases(), null,
                entry.payloads()));
        fx.restart();
        XAResource recovered = resource();
        recovered.commit(x, false);
        assertEquals(1, fx.rm().metrics().getTwoPhaseCommits());
        assertNull(fx.rm().journalEntry(XidKey.of(x)));
        assertEquals(1, fx.messages().size());
    }

    @Test
    void preparedBranchesSharingANameInSharedModeAreBothHeldAgainAndCommittedAfterARestart() throws Exception {
        Xid x = xid(21);
        Xid y = xid(22);
        XAResource[] xas = new XAResource[2];
        Xid[] ids = {x, y};
        for (int i = 0; i < 2; i++) {
            LeaseholdManagedConnection mc = (LeaseholdManagedConnection) fx.mcf.createManagedConnection(null, null);
            xas[i] = mc.getXAResource();
            xas[i].start(ids[i], XAResource.TMNOFLAGS);
            LeaseConnection c = (LeaseConnection) mc.getConnection(null, null);
            c.acquire(org.leasehold.connector.LeaseOptions.of("shared/n").mode(org.leasehold.lease.LeaseMode.SHARED));
            c.append(("reader " + i).getBytes(StandardCharsets.UTF_8));
            c.close();
            xas[i].end(ids[i], XAResource.TMSUCCESS);
        }
        assertEquals(XAResource.XA_OK, xas[0].prepare(x));
        assertEquals(XAResource.XA_OK, xas[1].prepare(y));
        fx.restart();
        XAResource recovered = resource();
        assertEquals(2, fx.mcf.runtime().leases().inspect("shared/n", 10).get(0).holders().size(),
                "both held again, in the mode they prepared with");
        recovered.commit(x, false);
        recovered.commit(y, false);
        assertEquals(List.of("reader 0", "reader 1"), texts());
        assertEquals(0, fx.rm().metrics().getHeuristicRollbacks());
    }

    @Test
    void everyCallLetsGoOfTheConnectionsLockWhetherItSucceedsOrFails() throws Exception {
        java.util.concurrent.ExecutorService other = java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "other-caller");
            t.setDaemon(true);
            return t;
        });
        try {
            XAResource xa = resource();
            Xid x = xid(23);
            Xid unknown = xid(24);
            List<Executable> calls = List.of(() -> xa.start(x, XAResource.TMNOFLAGS),
                    () -> xa.end(x, XAResource.TMSUCCESS), () -> xa.prepare(x), () -> xa.commit(unknown, true),
                    () -> xa.rollback(unknown), () -> xa.forget(unknown), () -> xa.recover(XAResource.TMSTARTRSCAN));
            for (Executable call : calls) {
                try {
                    call.execute();
                } catch (XAException e) {
                    assertEquals(XAException.XAER_NOTA, e.errorCode, e.getMessage());
                } catch (Throwable t) {
                    throw new AssertionError(t);
                }
                // Another thread gets the connection's lock at once: the call above let go of it.
                assertEquals(0, other.submit(() -> xa.recover(XAResource.TMNOFLAGS)).get(10,
                        java.util.concurrent.TimeUnit.SECONDS).length);
            }
        } finally {
            other.shutdownNow();
        }
    }

    @Test
    void aBranchWhoseTentativeLeaseAnOlderBranchBrokeVotesRollbackWithTheReason() throws Exception {
        Xid older = xid(25);
        Xid younger = xid(26);
        LeaseholdManagedConnection mo = (LeaseholdManagedConnection) fx.mcf.createManagedConnection(null, null);
        XAResource xo = mo.getXAResource();
        xo.start(older, XAResource.TMNOFLAGS);
        LeaseConnection co = (LeaseConnection) mo.getConnection(null, null);
        co.acquire("wound/a");
        fx.time.advance(Duration.ofMillis(10));
        LeaseholdManagedConnection my = (LeaseholdManagedConnection) fx.mcf.createManagedConnection(null, null);
        XAResource xy = my.getXAResource();
        xy.start(younger, XAResource.TMNOFLAGS);
        LeaseConnection cy = (LeaseConnection) my.getConnection(null, null);
        cy.acquire("wound/c");
        Lease youngerB = cy.acquire("wound/b");
        cy.append("younger".getBytes(StandardCharsets.UTF_8));
        cy.close();
        xy.end(younger, XAResource.TMSUCCESS);
        fx.waitElsewhere(youngerB);
        co.acquire("wound/b"); // the younger one waits: the older one breaks its tentative lease
        co.append("older".getBytes(StandardCharsets.UTF_8));
        co.close();
        xo.end(older, XAResource.TMSUCCESS);
        XAException vote = fails(XAException.XA_RBROLLBACK, () -> xy.prepare(younger));
        assertTrue(vote.getMessage().contains("votes rollback: a tentative lease was broken by an older transaction"),
                vote.getMessage());
        assertEquals(1, fx.rm().metrics().getRollbacks());
        assertNull(fx.rm().journalEntry(XidKey.of(younger)), "a vote to roll back is not journaled");
        fails(XAException.XAER_NOTA, () -> xy.rollback(younger));
        assertTrue(free("wound/c"), "the vote released the younger branch's other lease");
        xo.commit(older, true);
        assertEquals(List.of("older"), texts());
        assertEquals(1, fx.rm().metrics().getMessagesWritten());
    }

    @Test
    void aTransactionWhoseTentativeLeaseWasBrokenRollsBackBeforeItsTwoPhasesSayingWhy() throws Exception {
        fx.tm.begin();
        jakarta.transaction.Transaction older = fx.tm.getTransaction();
        try (LeaseConnection c = fx.connection()) {
            c.acquire("before/a");
        }
        fx.tm.suspend();
        fx.time.advance(Duration.ofMillis(10));
        fx.tm.begin();
        jakarta.transaction.Transaction younger = fx.tm.getTransaction();
        try (LeaseConnection c = fx.connection()) {
            c.acquire("before/c");
            fx.waitElsewhere(c.acquire("before/b"));
            c.append("younger".getBytes(StandardCharsets.UTF_8));
        }
        fx.tm.suspend();
        fx.tm.resume(older);
        try (LeaseConnection c = fx.connection()) {
            c.acquire("before/b");
        }
        fx.tm.commit();
        List<String> logged = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.logging.Logger jul = java.util.logging.Logger.getLogger(ResourceManager.class.getName());
        java.util.logging.Handler capture = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord r) {
                logged.add(r.getMessage() + " " + java.util.Arrays.toString(r.getParameters()));
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        jul.addHandler(capture);
        try {
            fx.tm.resume(younger);
            assertThrows(jakarta.transaction.RollbackException.class, () -> fx.tm.commit());
        } finally {
            jul.removeHandler(capture);
        }
        List<String> before = logged.stream().filter(m -> m.startsWith("LEASEHOLD-4208")).toList();
        assertEquals(1, before.size(), "told before the two phases: " + logged);
        assertTrue(before.get(0).contains("broken by an older transaction"), before.get(0));
        assertEquals(0, logged.stream().filter(m -> m.startsWith("LEASEHOLD-4216")).count(),
                "no vote at prepare: the transaction rolled back before it: " + logged);
        assertTrue(fx.messages().isEmpty());
    }

    @Test
    void resourcesOfOneResourceManagerAreTheSameRmAndKeepTheirTimeout() throws Exception {
        XAResource a = resource();
        XAResource b = resource();
        assertTrue(a.isSameRM(b));
        assertFalse(a.isSameRM(new AdapterTransactionTest.OtherResource()));
        assertEquals(0, a.getTransactionTimeout());
        assertTrue(a.setTransactionTimeout(42));
        assertEquals(42, a.getTransactionTimeout());
        AdapterFixture other = new AdapterFixture(AdapterFixture.freshRoot("xa-other"), fx.time, mcf -> mcf.setWriterId("writer-b"));
        try {
            XAResource c = ((LeaseholdManagedConnection) other.mcf.createManagedConnection(null, null)).getXAResource();
            assertFalse(a.isSameRM(c), "another log's resource manager");
        } finally {
            other.close();
        }
    }
}
