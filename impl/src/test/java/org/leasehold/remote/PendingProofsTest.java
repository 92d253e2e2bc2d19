package org.leasehold.remote;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
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
        ProtoCodec.WitnessReader link = proofs.reader(CompletableFuture::new, SERVER, () -> null, null);
        byte[] statement = {1, 2, 3};
        GrantWitness w = link.witness(statement, new byte[0], true);
        assertEquals(null, w.sealedNow(), "due: the answer came without it");
        proofs.arrived(sealsOf(frameOf(statement)), SERVER);
        assertArrayEquals(frameOf(statement), w.await(Duration.ZERO));
        assertEquals(0, proofs.size(), "handed over and forgotten");
    }

    @Test
    void aWitnessReadBeforeItsConnectionEndedFailsAtTheEnd() {
        PendingProofs proofs = new PendingProofs();
        ProtoCodec.WitnessReader link = proofs.reader(CompletableFuture::new, SERVER, () -> null, null);
        GrantWitness w = link.witness(new byte[] {4}, new byte[0], true);
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
        ProtoCodec.WitnessReader link = proofs.reader(CompletableFuture::new, SERVER, ended::get, null);
        // The end is marked and swept while an answer read just before it is still being decoded.
        ended.set("the server closed the connection");
        proofs.sessionEnded(SERVER, ended.get());
        GrantWitness late = link.witness(new byte[] {5}, new byte[0], true);
        assertTrue(late.isSealed(), "failed at once, not left for a proof that cannot come");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> late.await(Duration.ofSeconds(10)));
        assertTrue(e.getMessage().contains("the server closed the connection"), e.getMessage());
        assertTrue(e.getMessage().contains("renew the lease"), e.getMessage());
        assertEquals(0, proofs.size(), "nothing left behind for it");

        // A witness whose proof came with the answer needs nothing from the connection.
        byte[] statement = {6};
        GrantWitness sealed = link.witness(statement, frameOf(statement), false);
        assertArrayEquals(frameOf(statement), sealed.await(Duration.ZERO));
    }

    @Test
    void aProofTheServerSignsOnRequestIsAskedForOnlyWhenWantedAndOnce() {
        PendingProofs proofs = new PendingProofs();
        List<byte[]> asked = new ArrayList<>();
        ProtoCodec.WitnessReader link = proofs.reader(CompletableFuture::new, SERVER, () -> null, asked::add);
        byte[] statement = {7, 8};
        GrantWitness w = link.witness(statement, new byte[0], false);
        assertTrue(w.unasked());
        assertEquals(0, proofs.size(), "nothing registered for a proof nobody wants (most never are)");
        assertEquals(null, w.sealedNow(), "looking does not ask");
        assertFalse(w.isSealed());
        assertEquals(0, asked.size());

        CompletableFuture<byte[]> wanted = w.sealed().toCompletableFuture();
        w.whenSealed((frame, error) -> { });
        assertEquals(1, asked.size(), "asked once, however often wanted");
        assertArrayEquals(statement, asked.get(0));
        assertEquals(1, proofs.size());
        assertFalse(wanted.isDone());

        // The answer to the request names the statement asked for; its frame may carry another (a key rotated out).
        byte[] rekeyed = {7, 9};
        proofs.arrived(WitnessSeals.newBuilder().addSeals(WitnessSeal.newBuilder().setWitness(ByteString.copyFrom(
                statement)).setFrameWitness(ByteString.copyFrom(frameOf(rekeyed)))).build(), SERVER);
        assertArrayEquals(frameOf(rekeyed), w.await(Duration.ZERO));
        assertEquals(0, proofs.size());

        // A proof that follows by itself (an upgrade's) is not asked for.
        byte[] upgrade = {10};
        GrantWitness pushed = link.witness(upgrade, new byte[0], true);
        assertFalse(pushed.unasked());
        pushed.sealed();
        assertEquals(1, asked.size());
        proofs.arrived(sealsOf(frameOf(upgrade)), SERVER);
        assertArrayEquals(frameOf(upgrade), pushed.await(Duration.ZERO));
    }

    @Test
    void aProofRefusedOnRequestFailsTheWitnessWithTheServersReason() {
        PendingProofs proofs = new PendingProofs();
        ProtoCodec.WitnessReader link = proofs.reader(CompletableFuture::new, SERVER, () -> null, s -> { });
        byte[] statement = {11};
        GrantWitness w = link.witness(statement, new byte[0], false);
        w.sealed();
        proofs.arrived(WitnessSeals.newBuilder().addSeals(WitnessSeal.newBuilder().setWitness(ByteString.copyFrom(
                statement)).setError("the lease ended")).build(), SERVER);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> w.await(Duration.ofSeconds(10)));
        assertTrue(e.getMessage().contains("the lease ended"), e.getMessage());
        assertTrue(e.getMessage().contains(SERVER), e.getMessage());
    }

    @Test
    void aProofAskedForAfterItsConnectionEndedFailsAtOnceAndAsksNothing() {
        PendingProofs proofs = new PendingProofs();
        AtomicReference<String> ended = new AtomicReference<>();
        List<byte[]> asked = new ArrayList<>();
        ProtoCodec.WitnessReader link = proofs.reader(CompletableFuture::new, SERVER, ended::get, asked::add);
        GrantWitness w = link.witness(new byte[] {12}, new byte[0], false);
        ended.set("the server closed the connection");
        proofs.sessionEnded(SERVER, ended.get());
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> w.await(Duration.ofSeconds(10)));
        assertTrue(e.getMessage().contains("the server closed the connection"), e.getMessage());
        assertEquals(0, asked.size());
        assertEquals(0, proofs.size());
    }
}
