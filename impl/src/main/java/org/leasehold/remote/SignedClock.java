package org.leasehold.remote;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;

import org.leasehold.audit.AuditFormatException;
import org.leasehold.audit.AuditProblem;
import org.leasehold.audit.AuditVerifier;
import org.leasehold.audit.BatchProof;
import org.leasehold.audit.KeyId;
import org.leasehold.audit.KeySet;
import org.leasehold.audit.PublishedKey;
import org.leasehold.audit.SignedTime;
import org.leasehold.audit.SignedTimeProof;
import org.leasehold.audit.VerifyingKey;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseNames;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.time.Micros;
import org.leasehold.wire.ProtoCodec;
import org.leasehold.wire.proto.KeysReply;
import org.leasehold.wire.proto.SignedTimeReply;

/**
 * One server's signed time, checked: its public keys, fetched once over the session and pinned (a key that changes
 * is logged and fetched again), each answer's signature and nonce verified against them, and this process's own
 * clock compared with the signed time (Roughtime-style: the server's time lies within {@code midpoint ± radius}, read
 * between the request and its answer). A clock further off than {@code maxClockError} beyond that makes the client
 * refuse to use the server until a later check passes. Thread-safe.
 */
final class SignedClock {
    private static final System.Logger LOG = System.getLogger(SignedClock.class.getName());

    /** Fetches the server's keys (one call). */
    interface KeysCall {
        KeysReply keys() throws LeaseException;
    }

    private final String address;
    private final Duration maxClockError;
    private volatile AuditVerifier pinned;
    private volatile String refusal;
    private volatile long lastOffsetMicros;

    SignedClock(String address, Duration maxClockError) {
        this.address = address;
        this.maxClockError = maxClockError;
    }

    /** Why the client refuses to use the server now (its own clock is off), or null. */
    String refusal() {
        return refusal;
    }

    /** The pinned keys, fetching them on first use. */
    KeySet keys(KeysCall call) throws LeaseException {
        AuditVerifier v = pinned;
        if (v == null) {
            v = pin(call.keys());
        }
        return v.keys();
    }

    /** The keys {@code reply} serves, pinned in place of the earlier ones if they differ (logged). */
    KeySet update(KeysReply reply) throws LeaseException {
        AuditVerifier v = pinned;
        if (v != null && sameIds(v.keys(), reply)) {
            return v.keys();
        }
        return pin(reply).keys();
    }

    private static boolean sameIds(KeySet keys, KeysReply reply) {
        if (keys.keys().size() != reply.getKeysCount()) {
            return false;
        }
        for (org.leasehold.wire.proto.PublicKey k : reply.getKeysList()) {
            if (k.getKeyId().size() != 16) {
                return false;
            }
            ByteBuffer id = ByteBuffer.wrap(k.getKeyId().toByteArray());
            if (keys.get(new KeyId(id.getLong(0), id.getLong(8))) == null) {
                return false;
            }
        }
        return true;
    }

    private synchronized AuditVerifier pin(KeysReply reply) throws LeaseException {
        List<PublishedKey> keys = new ArrayList<>();
        for (org.leasehold.wire.proto.PublicKey k : reply.getKeysList()) {
            VerifyingKey key;
            try {
                key = VerifyingKey.of(k.getEd25519().toByteArray());
            } catch (IllegalArgumentException e) {
                throw new LeaseException("lease server " + address + " served a public key that is not an Ed25519 key ("
                        + e.getMessage() + "); is it a server of another release?");
            }
            String statedId = HexFormat.of().formatHex(k.getKeyId().toByteArray());
            if (!key.id().toString().equals(statedId)) {
                throw new LeaseException("lease server " + address + " served key " + key.id() + " under the id "
                        + statedId + ", which is not its id; is it a server of another release?");
            }
            keys.add(new PublishedKey(key, k.getServiceId(), k.getValidFromMicros(), k.getValidUntilMicros(),
                    Long.MAX_VALUE));
        }
        AuditVerifier v = new AuditVerifier(KeySet.of(keys));
        AuditVerifier old = pinned;
        if (old != null) {
            // Every key pinned before still served: a rotation (SERVER.md, "Signing"), not a key replaced.
            boolean rotation = ids(v.keys()).containsAll(ids(old.keys()));
            LOG.log(rotation ? System.Logger.Level.INFO : System.Logger.Level.WARNING, "LEASEHOLD-8112 lease server "
                    + "{0} now signs with keys {1} (pinned before: {2}{3}); pinned the new ones", address,
                    ids(v.keys()), ids(old.keys()), rotation ? ", all still served: a rotation" : "");
        }
        pinned = v;
        return v;
    }

    private static List<String> ids(KeySet keys) {
        List<String> out = new ArrayList<>();
        for (PublishedKey k : keys.keys()) {
            out.add(k.id().toString());
        }
        return out;
    }

    /**
     * Verifies a time answer to {@code nonce}: decoded, the nonce echoed, signed by a pinned key (the keys are fetched
     * again once if it names another key).
     *
     * @throws LeaseServiceUnavailableException if the server answered with an error, or the answer does not verify
     *                                          (the message says what was wrong)
     */
    SignedTimeProof verify(byte[] nonce, SignedTimeReply reply, KeysCall keys) throws LeaseException {
        if (reply.hasError()) {
            throw ProtoCodec.exception(reply.getError(), address);
        }
        SignedTimeProof p;
        try {
            byte[] bytes = reply.getSignedTime().toByteArray();
            p = new SignedTimeProof(SignedTime.decode(bytes), bytes, BatchProof.decode(reply.getProof().toByteArray()));
        } catch (AuditFormatException e) {
            throw refused("does not decode: " + e.getMessage());
        }
        if (!Arrays.equals(p.time().nonce(), nonce)) {
            throw refused("answers another nonce than the one sent");
        }
        keys(keys);
        List<AuditProblem> problems = pinned.check(p);
        if (!problems.isEmpty() && problems.get(0).kind() == AuditProblem.Kind.UNKNOWN_KEY) {
            pin(keys.keys());
            problems = pinned.check(p);
        }
        if (!problems.isEmpty()) {
            throw refused("does not verify: " + problems.get(0).message());
        }
        return p;
    }

    private LeaseServiceUnavailableException refused(String what) {
        LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-8111 the signed time of lease server {0} {1}", address, what);
        return new LeaseServiceUnavailableException(null, "the signed time of lease server " + address + " " + what
                + ": the answer was refused. Something between this client and the server changed it, or the server "
                + "is not the one whose keys were pinned; check the address and the network, and restart the client "
                + "if the server's key was replaced on purpose");
    }

    /**
     * Compares this process's clock with the signed time {@code t}, asked at local {@code t0} and answered at local
     * {@code t1}: the server read its clock in {@code [t0, t1]}, so this clock is off by more than the bound when
     * {@code |midpoint - (t0 + t1) / 2|} exceeds radius plus round trip plus {@code maxClockError}. Sets (or clears)
     * the refusal and returns it.
     */
    String check(long t0, SignedTimeProof t, long t1) {
        long rtt = Math.max(0, t1 - t0);
        long offset = t.time().midpoint() - (t0 + rtt / 2);
        lastOffsetMicros = offset;
        long slack = t.time().radius() + rtt;
        long beyond = Math.abs(offset) - slack;
        String before = refusal;
        if (beyond > Micros.of(maxClockError)) {
            String why = "this process's clock is " + Duration.ofNanos(Math.abs(offset) * 1_000L) + (offset > 0
                    ? " behind" : " ahead of") + " the signed time of lease server " + address + " (" + Micros
                    .toInstant(t.time().midpoint()) + " +- " + Duration.ofNanos(t.time().radius() * 1_000L)
                    + ", round trip " + Duration.ofNanos(rtt * 1_000L) + "): " + Duration.ofNanos(beyond * 1_000L)
                    + " beyond what the signed time allows, more than maxClockError (" + maxClockError + "). Messages "
                    + "this process writes would be refused by the bag store (their timestamps would lie too far from "
                    + "their leases' signed time), so no lease is taken from this server: correct this machine's clock "
                    + "(NTP), then calls go on at the next clock measurement";
            refusal = why;
            if (before == null) {
                LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-8110 " + why);
            }
            return why;
        }
        refusal = null;
        if (before != null) {
            LOG.log(System.Logger.Level.INFO, "LEASEHOLD-8113 this process's clock is within maxClockError of lease "
                    + "server {0}'s signed time again (off by {1} us)", address, offset);
        }
        return null;
    }

    /** Whether this client has pinned the server's keys: from then on the server must sign. */
    boolean pinnedKeys() {
        return pinned != null;
    }

    /**
     * Refuses the server, whose keys this client pinned, because it {@code what} (it stopped signing): no lease is
     * taken from it until a later signed time verifies. Logged once per change of reason.
     *
     * @return the exception that says so, for the caller to throw
     */
    LeaseServiceUnavailableException downgraded(String what) {
        AuditVerifier v = pinned;
        String why = "lease server " + address + " " + what + ", but this client pinned its keys "
                + (v == null ? List.of() : ids(v.keys())) + " when it signed: a server that signed must keep signing "
                + "(a downgrade: restarted with --no-signing, an earlier release, or another process on its address). "
                + "No lease is taken from it and its unsigned grants are refused; restart it with its signing key, or "
                + "restart this client if signing was turned off on purpose";
        String before = refusal;
        refusal = why;
        if (!why.equals(before)) {
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-8114 " + why);
        }
        return new LeaseServiceUnavailableException(null, why);
    }

    /**
     * The refusal of {@code lease} if this client pinned the server's keys and a grant of it carries no witness (the
     * server stopped signing: {@link #downgraded}), or null.
     */
    LeaseServiceUnavailableException unsigned(Lease lease) {
        if (pinned == null) {
            return null;
        }
        for (LeaseGrant g : lease.grants()) {
            if (g.witness() == null) {
                return downgraded("granted '" + LeaseNames.printable(g.name()) + "' generation " + g.generation()
                        + " without a witness");
            }
        }
        return null;
    }

    /** Refuses the server until a later check passes, for {@code why} (its signed time did not verify). */
    void refuse(String why) {
        refusal = why;
    }

    /** The last measured offset of the signed time from this process's clock, in microseconds. */
    long lastOffsetMicros() {
        return lastOffsetMicros;
    }
}
