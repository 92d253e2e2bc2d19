package org.leasehold.remote;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.leasehold.lease.GrantWitness;
import org.leasehold.wire.ProtoCodec;
import org.leasehold.wire.proto.WitnessSeal;
import org.leasehold.wire.proto.WitnessSeals;

import com.google.protobuf.ByteString;

/**
 * The proofs a connection owes: handed to the witness read on it when they come, and failed as soon as the connection
 * has ended, whether the witness was read before the end or after it (never left to a writer's timeout).
 */
class PendingProofsTest {
    private static final String SERVER = "127.0.0.1:7420";

    /** A frame witness (FORMAT.md: magic, version, flags, the statement's length and bytes; no proof needed here). */
    private static byte[] frameOf(byte[] statement) {
        return ByteBuffer.allocate(8 + statement.length).putInt(0x4C484657).put((byte) 1).put((byte) 0)
                .putShort((short) statement.length).put(statement).array();
    }

    private static WitnessSeals sealsOf(byte[] frame) {
        return WitnessSeals.newBuilder().addSeals(WitnessSeal.newBuilder().setFrameWitness(ByteString.copyFrom(frame)))
                .build();
    }

    @Test
    void aProofThatComesOnTheConnectionCompletesTheWitnessReadOnIt() {
        PendingProofs proofs = new PendingProofs();
        ProtoCodec.WitnessReader link = proofs.reader(CompletableFuture::new, SERVER, () -> null);
        byte[] statement = {1, 2, 3};
        GrantWitness w = link.witness(statement, new byte[0]);
        assertEquals(null, w.sealedNow(), "due: the answer came without it");
        proofs.arrived(sealsOf(frameOf(statement)), SERVER);
        assertArrayEquals(frameOf(statement), w.await(Duration.ZERO));
        assertEquals(0, proofs.size(), "handed over and forgotten");
    }

    @Test
    void aWitnessReadBeforeItsConnectionEndedFailsAtTheEnd() {
        PendingProofs proofs = new PendingProofs();
        ProtoCodec.WitnessReader link = proofs.reader(CompletableFuture::new, SERVER, () -> null);
        GrantWitness w = link.witness(new byte[] {4}, new byte[0]);
        proofs.sessionEnded(SERVER, "the connection was reset");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> w.await(Duration.ofSeconds(10)));
        assertTrue(e.getMessage().contains("ended before the proof of this witness arrived (the connection was reset)"),
                e.getMessage());
        assertTrue(e.getMessage().contains(SERVER), e.getMessage());
        assertEquals(0, proofs.size());
    }

    @Test
    void aWitnessReadAfterItsConnectionEndedFailsAtOnceInsteadOfWaitingOutTheTimeout() {
        PendingProofs proofs = new PendingProofs();
        AtomicReference<String> ended = new AtomicReference<>();
        ProtoCodec.WitnessReader link = proofs.reader(CompletableFuture::new, SERVER, ended::get);
        // The end is marked and swept while an answer read just before it is still being decoded.
        ended.set("the server closed the connection");
        proofs.sessionEnded(SERVER, ended.get());
        GrantWitness late = link.witness(new byte[] {5}, new byte[0]);
        assertTrue(late.isSealed(), "failed at once, not left for a proof that cannot come");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> late.await(Duration.ofSeconds(10)));
        assertTrue(e.getMessage().contains("the server closed the connection"), e.getMessage());
        assertTrue(e.getMessage().contains("renew the lease"), e.getMessage());
        assertEquals(0, proofs.size(), "nothing left behind for it");

        // A witness whose proof came with the answer needs nothing from the connection.
        byte[] statement = {6};
        GrantWitness sealed = link.witness(statement, frameOf(statement));
        assertArrayEquals(frameOf(statement), sealed.await(Duration.ZERO));
    }
}
