package org.leasehold.remote;

import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Supplier;

import org.leasehold.lease.GrantWitness;
import org.leasehold.wire.ProtoCodec;
import org.leasehold.wire.proto.WitnessSeal;
import org.leasehold.wire.proto.WitnessSeals;

/**
 * The proofs of the witnesses a server sent without them: a grant's answer carries the witness statement at once,
 * and the frame witness follows on the same session when the server's batch is signed ({@code WitnessSeals}). Each
 * witness's {@link GrantWitness#sealed()} completes when its proof arrives, whichever of the two comes first to this
 * client (the answer is handed to the caller's thread, the push is read on the transport's). Keyed by the statement,
 * which names the grant, the event and the service's time, so one registry serves every session of a client.
 *
 * <p>Each connection (a socket link, a gRPC session stream) reads the witnesses of the answers that arrive on it
 * (a renewal's or upgrade's too, before the caller gets the answer) through its own {@link #reader}, whose futures
 * for proofs still due make sure that a caller blocking on one gets it: they ask the server to sign its batch now
 * ({@code HurryRequest}) and, on the socket transport, read the connection the proof comes on while the caller waits.
 * When the connection ends first, they fail at once ({@link #sessionEnded}, or the reader itself for a witness read
 * during the end): the proof would have come on it.
 *
 * <p>A server that signs on request ({@code proofs_on_request}) pushes only the proofs the request asked for
 * ({@code proof_follows}: an upgrade's); any other witness waits here, unregistered, until somebody asks for its proof
 * ({@link GrantWitness#sealed()}), which registers it and sends a {@code ProofRequest} on its connection. Most grants
 * are released without a message written under them, and their witnesses are never signed.
 */
final class PendingProofs implements ProtoCodec.WitnessReader {
    private final Map<ByteBuffer, CompletableFuture<byte[]>> pending = new ConcurrentHashMap<>();

    @Override
    public GrantWitness witness(byte[] statement, byte[] frameWitness, boolean proofFollows) {
        return witness(statement, frameWitness, CompletableFuture::new, null, null);
    }

    /**
     * The witnesses of the answers one connection of {@code server} reads: a proof still due is a future that
     * {@code due} makes (one that hurries the server and, where the transport needs it, reads the connection when a
     * caller blocks on it), failed at once if {@code ended} says why the connection has ended (null while it lasts):
     * the proof would have come on it, and {@link #sessionEnded} may have been told before this witness was read.
     * With {@code ask} (the server signs on request), a witness whose proof does not follow by itself is asked for
     * with {@code ask} once somebody wants its proof; null: every proof follows (a server of an earlier release).
     */
    ProtoCodec.WitnessReader reader(Supplier<CompletableFuture<byte[]>> due, String server, Supplier<String> ended,
            Consumer<byte[]> ask) {
        return (statement, frameWitness, follows) -> {
            if (ask != null && !follows && frameWitness.length == 0) {
                CompletableFuture<byte[]> f = due.get();
                return new GrantWitness(statement, f, () -> asked(statement, f, server, ended, ask));
            }
            return witness(statement, frameWitness, due, server, ended);
        };
    }

    /**
     * Somebody wants the proof of {@code statement}, which waits for {@code f}: registers it and asks the server with
     * {@code ask}; shares the proof instead if the same witness was asked for already (another copy of it).
     */
    private void asked(byte[] statement, CompletableFuture<byte[]> f, String server, Supplier<String> ended,
            Consumer<byte[]> ask) {
        ByteBuffer key = ByteBuffer.wrap(statement);
        CompletableFuture<byte[]> registered = pending.computeIfAbsent(key, k -> f);
        if (registered != f) {
            registered.whenComplete((bytes, error) -> {
                if (error != null) {
                    f.completeExceptionally(error);
                } else {
                    f.complete(bytes);
                }
            });
            if (registered.isDone()) {
                pending.remove(key, registered);
            }
            return;
        }
        // Registered before the look at the connection's end, as in witness(): one of the two sees the other.
        String why = ended.get();
        if (why != null) {
            if (pending.remove(key, f)) {
                f.completeExceptionally(endedError(server, why));
            }
            return;
        }
        ask.accept(statement);
    }

    private GrantWitness witness(byte[] statement, byte[] frameWitness, Supplier<CompletableFuture<byte[]>> due,
            String server, Supplier<String> ended) {
        if (frameWitness.length > 0) {
            return new GrantWitness(statement, CompletableFuture.completedFuture(frameWitness));
        }
        ByteBuffer key = ByteBuffer.wrap(statement);
        CompletableFuture<byte[]> f = pending.computeIfAbsent(key, k -> due.get());
        if (f.isDone()) {
            // The proof came first: hand it over and forget it.
            pending.remove(key, f);
        } else if (ended != null) {
            // Registered after the connection's end swept the proofs due (it is told after it is marked ended, so one
            // of the two sees the other).
            String why = ended.get();
            if (why != null && pending.remove(key, f)) {
                f.completeExceptionally(endedError(server, why));
            }
        }
        return new GrantWitness(statement, f);
    }

    /** Completes the witnesses whose proofs (or signing failures) {@code seals} brings, from {@code server}. */
    void arrived(WitnessSeals seals, String server) {
        for (WitnessSeal s : seals.getSealsList()) {
            byte[] frame = s.getFrameWitness().toByteArray();
            // The statement asked for, where the seal names it (an answer to a proof request), else the frame's own.
            byte[] statement = !s.getWitness().isEmpty() ? s.getWitness().toByteArray() : statementOf(frame);
            if (statement == null) {
                continue;
            }
            ByteBuffer key = ByteBuffer.wrap(statement);
            CompletableFuture<byte[]> done = frame.length > 0 ? CompletableFuture.completedFuture(frame)
                    : CompletableFuture.failedFuture(new IllegalStateException("lease server " + server
                            + " could not sign the witness: " + s.getError()));
            CompletableFuture<byte[]> waiting = take(key, done);
            if (waiting != null) {
                if (frame.length > 0) {
                    waiting.complete(frame);
                } else {
                    waiting.completeExceptionally(new IllegalStateException("lease server " + server
                            + " could not sign the witness: " + s.getError()));
                }
            }
        }
    }

    /** Removes and returns the future waiting for {@code key}, or (none waits yet) leaves {@code done} for it. */
    private CompletableFuture<byte[]> take(ByteBuffer key, CompletableFuture<byte[]> done) {
        AtomicReference<CompletableFuture<byte[]>> waiting = new AtomicReference<>();
        pending.compute(key, (k, v) -> {
            if (v == null || v.isDone()) {
                return done;
            }
            waiting.set(v);
            return null;
        });
        return waiting.get();
    }

    /**
     * A session of {@code server} ended: its proofs still due will not come. Their witnesses fail (a writer's
     * {@link GrantWitness#await} says so; renewing the lease gives a new witness), and proofs nobody took are dropped.
     */
    void sessionEnded(String server, String why) {
        for (Map.Entry<ByteBuffer, CompletableFuture<byte[]>> e : pending.entrySet()) {
            if (pending.remove(e.getKey(), e.getValue()) && !e.getValue().isDone()) {
                e.getValue().completeExceptionally(endedError(server, why));
            }
        }
    }

    private static IllegalStateException endedError(String server, String why) {
        return new IllegalStateException("the session with lease server " + server + " ended before the proof of this "
                + "witness arrived (" + why + "); renew the lease to get a new witness");
    }

    /** How many proofs are due or waiting to be taken (tests). */
    int size() {
        return pending.size();
    }

    /** The witness statement inside a frame witness (FORMAT.md, "Frame witness"), or null if it is not one. */
    private static byte[] statementOf(byte[] frame) {
        if (frame.length < 8) {
            return null;
        }
        int len = ((frame[6] & 0xff) << 8) | (frame[7] & 0xff);
        if (8 + len > frame.length) {
            return null;
        }
        byte[] s = new byte[len];
        System.arraycopy(frame, 8, s, 0, len);
        return s;
    }
}
