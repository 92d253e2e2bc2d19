package org.leasehold.remote;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.function.Consumer;

import org.junit.jupiter.api.Test;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.wire.proto.SessionReply;
import org.leasehold.wire.proto.SessionRequest;

/**
 * The client against a server that answers session requests with the wrong kind of answer (as a server of another
 * release might): each call fails with an error saying what came back and what was due, and nothing hangs.
 */
class MismatchedServerTest {
    /** Answers every session request with "ended at 1" (a release's answer), whatever it asked. */
    private static final class WrongAnswers extends ScriptedServer {
        @Override
        void answer(SessionRequest r, Consumer<SessionReply> send) {
            long id = r.hasAcquire() ? r.getAcquire().getRequestId() : r.getRequestId();
            send.accept(SessionReply.newBuilder().setRequestId(id).setEndedAtMicros(1).build());
        }
    }

    @Test
    void wrongKindsOfAnswerFailTheCallSayingWhatCameBack() throws Exception {
        try (ScriptedServer server = new WrongAnswers().start(Duration.ofSeconds(2))) {
            RemoteLeaseService client = server.client();
            LeaseException echo = assertThrows(LeaseException.class, () -> client.ping("n"));
            assertFalse(echo instanceof LeaseServiceUnavailableException, "an answer came; it was the wrong one: "
                    + echo);
            assertTrue(echo.getMessage().contains("answered the echo with ENDED_AT_MICROS where ECHO was due")
                    && echo.getMessage().contains("matching client and server versions"), echo.getMessage());
            LeaseException acquire = assertThrows(LeaseException.class,
                    () -> client.acquire(LeaseRequest.builder(new HolderId("mismatch", "t"), "n").build()));
            assertTrue(acquire.getMessage().contains("answered the acquisition with ENDED_AT_MICROS where a lease or "
                    + "an error was due"), acquire.getMessage());
        }
    }
}
