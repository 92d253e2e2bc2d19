package org.leasehold.adapter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import jakarta.transaction.RollbackException;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseLostException;
import org.leasehold.lease.SessionEvent;
import org.leasehold.lease.SessionEvent.Type;
import org.leasehold.lease.SessionListener;

/**
 * Session events (L13) from the resource adapter: an application subscribed on the connection factory hears
 * {@code JEOPARDY} when a renewal of its transaction's leases fails, {@code SAFE} when one succeeds again, and
 * {@code EXPIRED} when the leases are lost; on the manual clock, renewals failing because the work manager refuses
 * them (as when the container is overloaded).
 */
class AdapterSessionEventsTest {
    private AdapterFixture fx;
    private final List<SessionEvent> heard = new CopyOnWriteArrayList<>();
    private final SessionListener recorder = heard::add;

    @BeforeEach
    void start() throws Exception {
        fx = new AdapterFixture("session-events", mcf -> { });
        fx.factory.addSessionListener(recorder);
    }

    @AfterEach
    void stop() throws Exception {
        fx.close();
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** Moves the clock past the next renewal and waits for it to have run. */
    private void nextRenewal() throws Exception {
        fx.time.advance(Duration.ofMillis(3_400));
        fx.context.drain();
    }

    private List<Type> types() {
        return heard.stream().map(SessionEvent::type).toList();
    }

    @Test
    void aFailedRenewalIsJeopardyAndTheNextSuccessfulOneIsSafe() throws Exception {
        fx.tm.begin();
        try (LeaseConnection c = fx.connection()) {
            Lease taken = c.acquire("account/1");
            nextRenewal();
            assertEquals(List.of(), heard, "a renewal that succeeds is no event");

            fx.context.refuseWork.set(true);
            Instant before = fx.time.now();
            nextRenewal();
            assertEquals(List.of(Type.JEOPARDY), types());
            SessionEvent jeopardy = heard.get(0);
            assertEquals(List.of("account/1"), jeopardy.lease().names());
            assertTrue(jeopardy.at().isAfter(before) && !jeopardy.at().isAfter(fx.time.now()),
                    "told at the time of the failed renewal, on the injected clock: " + jeopardy.at());
            assertTrue(jeopardy.detail().contains("the work manager refused the renewal"), jeopardy.detail());

            nextRenewal();
            assertEquals(List.of(Type.JEOPARDY), types(), "jeopardy is told once, not at every failure");

            // A retry is due within a tenth of the lease time. Advance only that far: the renewal runs on the work
            // manager's thread after the clock has moved, and a step past the deadline would let it find the lease
            // expired.
            fx.context.refuseWork.set(false);
            fx.time.advance(Duration.ofMillis(1_000));
            fx.context.drain();
            assertEquals(List.of(Type.JEOPARDY, Type.SAFE), types());
            SessionEvent safe = heard.get(1);
            assertTrue(safe.lease().deadline().isAfter(taken.deadline()), "safe carries the renewed lease");
            // The failed renewal, then a retry every tenth of the lease time (1 s) while the work manager refused.
            assertTrue(safe.detail().matches("renewed after [3-5] failed renewals"), safe.detail());
            assertEquals(safe.detail(), "renewed after " + fx.rm().metrics().getRenewalFailures() + " failed renewals");
            c.append(bytes("after the outage"));
        }
        fx.tm.commit();
        assertEquals(1, fx.messages().size(), "the transaction survived the outage");
        assertEquals(1, fx.rm().metrics().getSessionJeopardies());
        assertEquals(1, fx.rm().metrics().getSessionsSafe());
    }

    @Test
    void leasesLostAfterFailedRenewalsAreExpiredAndTheTransactionRollsBack() throws Exception {
        fx.tm.begin();
        LeaseConnection c = fx.connection();
        c.acquire("account/2", "account/3");
        fx.context.refuseWork.set(true);
        fx.time.advance(Duration.ofSeconds(11));
        fx.context.drain();
        assertEquals(List.of(Type.JEOPARDY, Type.EXPIRED), types(), "one lease of two names, one event each");
        SessionEvent expired = heard.get(1);
        assertEquals(List.of("account/2", "account/3"), expired.lease().names());
        assertTrue(expired.detail().contains("renewals in a row failed"), expired.detail());
        assertThrows(LeaseLostException.class, () -> c.append(bytes("too late")));
        c.close();
        assertThrows(RollbackException.class, () -> fx.tm.commit());
        assertEquals(1, fx.rm().metrics().getSessionJeopardies());
        assertEquals(0, fx.rm().metrics().getSessionsSafe());
        assertTrue(fx.messages().isEmpty());
    }

    @Test
    void aThrowingListenerDoesNotSilenceTheOthersAndRemovedListenersHearNothing() throws Exception {
        SessionListener broken = e -> {
            throw new IllegalStateException("listener bug");
        };
        fx.factory.addSessionListener(broken);
        List<SessionEvent> removed = new CopyOnWriteArrayList<>();
        SessionListener gone = removed::add;
        fx.factory.addSessionListener(gone);
        assertTrue(fx.factory.removeSessionListener(gone));
        assertFalse(fx.factory.removeSessionListener(gone), "removed once");

        fx.tm.begin();
        try (LeaseConnection c = fx.connection()) {
            c.acquire("account/4");
            fx.context.refuseWork.set(true);
            nextRenewal();
        }
        assertEquals(List.of(Type.JEOPARDY), types(), "heard despite the throwing listener");
        assertEquals(List.of(), removed);
        fx.tm.rollback();

        InvalidLeaseRequestException e = assertThrows(InvalidLeaseRequestException.class,
                () -> fx.factory.addSessionListener(null));
        assertTrue(e.getMessage().contains("needs a listener"), e.getMessage());
    }
}
