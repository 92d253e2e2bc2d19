package org.leasehold.server;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnsafeByteOperations;

import org.leasehold.audit.AuditFormatException;
import org.leasehold.audit.AuditSigner;
import org.leasehold.audit.PublishedKey;
import org.leasehold.audit.SignedTime;
import org.leasehold.audit.SignedTimeProof;
import org.leasehold.audit.Witness;
import org.leasehold.lease.GrantWitness;
import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseNames;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.wire.ProtoCodec;
import org.leasehold.wire.proto.KeysReply;
import org.leasehold.wire.proto.ProofRequest;
import org.leasehold.wire.proto.SignedTimeReply;
import org.leasehold.wire.proto.TimeRequest;
import org.leasehold.wire.proto.WitnessSeal;
import org.leasehold.wire.proto.WitnessSeals;

/**
 * The server's signatures on the wire, for both transports and the unary calls: the proofs that follow a grant's
 * witnesses ({@code WitnessSeals}), the answers to time requests, and the public keys. Nothing here waits: each
 * answer is a future that the signer's next batch completes.
 */
final class Signatures {
    /** The most witnesses one proof request may name. */
    static final int MAX_PROOFS_PER_REQUEST = 64;
    private final EngineHolder holder;

    Signatures(EngineHolder holder) {
        this.holder = holder;
    }

    /** The public keys the server signs with, as the keys call answers them. */
    KeysReply keys() {
        KeysReply.Builder b = KeysReply.newBuilder().setSigning(holder.signer() != null);
        for (PublishedKey k : holder.keys()) {
            byte[] id = HexFormat.of().parseHex(k.id().toString());
            b.addKeys(org.leasehold.wire.proto.PublicKey.newBuilder().setKeyId(ByteString.copyFrom(id))
                    .setEd25519(ByteString.copyFrom(k.key().raw())).setServiceId(k.serviceId())
                    .setValidFromMicros(k.validFrom()).setValidUntilMicros(k.validUntil()));
        }
        return b.build();
    }

    /** The public keys for {@code GET /keys}: {@code signing} and a list of keys, each as the keys file states it. */
    Map<String, Object> keysView() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("signing", holder.signer() != null);
        List<Map<String, Object>> keys = new ArrayList<>();
        for (PublishedKey k : holder.keys()) {
            Map<String, Object> key = new LinkedHashMap<>();
            key.put("keyId", k.id().toString());
            key.put("service", k.serviceId());
            key.put("ed25519", k.key().base64());
            key.put("validFrom", k.validFrom() == Long.MIN_VALUE ? "open" : k.validFrom());
            key.put("validUntil", k.validUntil() == Long.MAX_VALUE ? "open" : k.validUntil());
            keys.add(key);
        }
        m.put("keys", keys);
        return m;
    }

    /**
     * A client waits for the proof of a witness it was sent without one: the batch being gathered is signed without
     * the rest of its linger (with none gathered, the next batch is). Nothing if the server signs nothing. However
     * often clients hurry, a hurried batch waits until the signing thread has rested three times as long as its last
     * batch took (ARCHITECTURE.md, "The audit chain"), so hurries cost the server a quarter of a core at most.
     */
    void hurry() {
        AuditSigner signer = holder.signer();
        if (signer != null) {
            signer.hurry();
        }
    }

    /**
     * Answers a time request: the server's time and radius over the client's nonce, signed in the next batch, which
     * the request hurries (a client waits for the answer). A server
     * that signs nothing answers UNAVAILABLE; a nonce longer than {@value SignedTime#MAX_NONCE} bytes INVALID.
     */
    CompletableFuture<SignedTimeReply> signTime(TimeRequest request) {
        AuditSigner signer = holder.signer();
        if (signer == null) {
            return CompletableFuture.completedFuture(SignedTimeReply.newBuilder().setError(ProtoCodec.error(
                    new LeaseServiceUnavailableException(null, "this lease server signs nothing (" + (holder.backend()
                            != null ? "it serves an etcd backend" : "it runs with --no-signing") + "), so it answers "
                            + "no signed time requests: use a server that signs, or do without signed time")))
                    .build());
        }
        if (request.getNonce().size() > SignedTime.MAX_NONCE) {
            return CompletableFuture.completedFuture(SignedTimeReply.newBuilder().setError(ProtoCodec.error(
                    new InvalidLeaseRequestException(InvalidLeaseRequestException.Reason.OUT_OF_RANGE, "a time request's nonce "
                            + "is at most " + SignedTime.MAX_NONCE + " bytes, got " + request.getNonce().size()
                            + ": send 16 random bytes"))).build());
        }
        CompletableFuture<SignedTimeProof> signed = signer.signTime(request.getNonce().toByteArray(),
                holder.time().nowMicros());
        // The client waits for the answer (its commit does): sign without the batch's linger.
        signer.hurry();
        return signed.handle((t, e) -> {
            if (e != null) {
                Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
                return SignedTimeReply.newBuilder().setError(ProtoCodec.error(new LeaseServiceUnavailableException(
                        null, "the lease server could not sign the time: " + cause.getMessage() + "; retry"))).build();
            }
            return SignedTimeReply.newBuilder().setSignedTime(ByteString.copyFrom(t.timeBytes()))
                    .setProof(ByteString.copyFrom(t.proof().encode())).build();
        });
    }

    /**
     * Hands {@code send} the proofs of the witnesses of {@code lease} that its answer {@code sent} carried without
     * one, once their batch is signed (on the signing thread, or at once if they are signed now); false, and nothing
     * sent, if there are none (no witnesses, or every proof went with the answer).
     */
    static boolean seals(Lease lease, org.leasehold.wire.proto.Lease sent, Consumer<WitnessSeals> send) {
        List<GrantWitness> pending = new ArrayList<>(0);
        for (int i = 0; i < sent.getGrantsCount(); i++) {
            org.leasehold.wire.proto.Grant g = sent.getGrants(i);
            if (!g.getWitness().isEmpty() && g.getFrameWitness().isEmpty()) {
                pending.add(lease.grants().get(i).witness());
            }
        }
        if (pending.isEmpty()) {
            return false;
        }
        push(pending.toArray(new GrantWitness[0]), null, null, send);
        return true;
    }

    /**
     * Answers a proof request of {@code principal}: hands {@code send} the proofs of the witnesses it names once their
     * batch is signed (hurried: the client waits), each with its statement, or the statement and why there is none
     * (not a witness of a lease that principal holds here now, as {@code owners} knows them). Returns how many were
     * found.
     */
    int proofs(String principal, GrantOwners owners, ProofRequest request, Consumer<WitnessSeals> send) {
        int n = request.getWitnessesCount();
        byte[][] statements = new byte[n][];
        GrantWitness[] found = new GrantWitness[n];
        String[] missing = new String[n];
        int count = 0;
        for (int i = 0; i < n; i++) {
            statements[i] = request.getWitnesses(i).toByteArray();
            Witness w;
            try {
                w = Witness.decode(statements[i]);
            } catch (AuditFormatException e) {
                missing[i] = "the proof request names no witness statement (" + e.getMessage() + "): send the bytes of "
                        + "a grant's witness field";
                continue;
            }
            found[i] = owners.witness(principal, w.name(), w.generation(), statements[i]);
            if (found[i] == null) {
                missing[i] = "this witness of '" + LeaseNames.printable(w.name()) + "' generation " + w.generation()
                        + " belongs to no lease that principal '" + principal + "' holds on this server now: the lease "
                        + "ended (released, expired or broken), or it was renewed several times since (the server keeps "
                        + "a lease's latest " + GrantOwners.RECENT_WITNESSES + " witnesses); write under the lease's "
                        + "latest renewal, or take the lease again";
            } else {
                count++;
            }
        }
        push(found, statements, missing, send);
        hurry();
        return count;
    }

    /**
     * Hands {@code send} one push with the proofs of {@code witnesses} in order, once all are signed; a null witness
     * is answered with {@code statements}' entry and {@code missing}'s reason. With {@code statements}, every seal
     * carries the statement asked for (the frame witness may carry another: a witness of a key rotated out twice is
     * signed under the current key's id).
     */
    private static void push(GrantWitness[] witnesses, byte[][] statements, String[] missing,
            Consumer<WitnessSeals> send) {
        WitnessSeal[] seals = new WitnessSeal[witnesses.length];
        AtomicInteger left = new AtomicInteger(seals.length);
        for (int i = 0; i < seals.length; i++) {
            GrantWitness w = witnesses[i];
            int at = i;
            if (w == null) {
                seals[at] = WitnessSeal.newBuilder().setWitness(ByteString.copyFrom(statements[at]))
                        .setError(missing[at]).build();
                if (left.decrementAndGet() == 0) {
                    send.accept(WitnessSeals.newBuilder().addAllSeals(Arrays.asList(seals)).build());
                }
                continue;
            }
            w.whenSealed((frame, error) -> {
                WitnessSeal.Builder seal = WitnessSeal.newBuilder();
                if (frame != null) {
                    // The frame witness is a copy of our own, so the message may wrap it rather than copy it again.
                    seal.setFrameWitness(UnsafeByteOperations.unsafeWrap(frame));
                    if (statements != null) {
                        seal.setWitness(UnsafeByteOperations.unsafeWrap(statements[at]));
                    }
                } else {
                    seal.setWitness(ByteString.copyFrom(w.statement())).setError(why(w));
                }
                seals[at] = seal.build();
                if (left.decrementAndGet() == 0) {
                    send.accept(WitnessSeals.newBuilder().addAllSeals(Arrays.asList(seals)).build());
                }
            });
        }
    }

    /** Why {@code w}, whose proof is due, has none. */
    private static String why(GrantWitness w) {
        try {
            w.await(java.time.Duration.ZERO);
            return "no proof";
        } catch (IllegalStateException failed) {
            return failed.getMessage();
        }
    }

    /**
     * {@code lease} as a unary call answers it: the proofs of its witnesses included, so the future completes once their
     * batch is signed (at once if they are signed or there are none).
     */
    static CompletableFuture<org.leasehold.wire.proto.Lease> sealed(Lease lease) {
        List<GrantWitness> pending = new ArrayList<>(0);
        for (var g : lease.grants()) {
            if (g.witness() != null && !g.witness().isSealed()) {
                pending.add(g.witness());
            }
        }
        if (pending.isEmpty()) {
            return CompletableFuture.completedFuture(ProtoCodec.lease(lease));
        }
        CompletableFuture<org.leasehold.wire.proto.Lease> answer = new CompletableFuture<>();
        AtomicInteger left = new AtomicInteger(pending.size());
        for (GrantWitness w : pending) {
            w.whenSealed((frame, error) -> {
                if (left.decrementAndGet() == 0) {
                    try {
                        answer.complete(ProtoCodec.lease(lease));
                    } catch (RuntimeException e) {
                        answer.completeExceptionally(e);
                    }
                }
            });
        }
        return answer;
    }
}
