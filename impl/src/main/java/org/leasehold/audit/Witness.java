package org.leasehold.audit;

import java.util.Objects;

import org.leasehold.lease.CorrelationId;
import org.leasehold.lease.Ending;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseMode;

/**
 * What a lease service states about one name of a lease when it grants, renews, upgrades or reinstates it: the seed's
 * six fields (expiry, signed time, the predecessor's watermark with its signed time, a partly random correlation id,
 * the predecessor's correlation id, how the predecessor ended and when) and the facts a checker needs beside them.
 * All instants are microseconds since the epoch in the service's time; {@link Long#MIN_VALUE} means "none".
 *
 * <p>{@link #encode()} is the canonical encoding (FORMAT.md, "Witness"): equal witnesses encode to equal bytes, and
 * {@link #decode(byte[])} accepts exactly what it produces. The signature covers these bytes (as a Merkle leaf).
 *
 * @param event                      what the service did
 * @param serviceId                  the lease service instance (its id as its admin view shows it)
 * @param keyId                      the key that signs this witness's batch
 * @param name                       the lease name
 * @param generation                 the grant's generation (fencing token)
 * @param mode                       exclusive, shared or a semaphore permit
 * @param kind                       tentative or full, after the event
 * @param floor                      messages under the lease lie strictly above it
 * @param writableFrom               no message under the lease before it
 * @param deadline                   the expiry: messages lie strictly below it, and the lease ends there
 * @param grantedAt                  when the lease was first granted
 * @param signedTime                 the service's time when it wrote this witness
 * @param radius                     the bound on the service's clock error at {@code signedTime}
 * @param correlationId              this grant's id (unchanged by renewals and upgrades)
 * @param predecessorId              the previous grant's id, {@link CorrelationId#NONE} if unknown
 * @param predecessorEnding          how the previous holder's lease ended
 * @param predecessorEndedAt         when it ended (an expired one: its deadline; unknown: the floor's bound)
 * @param predecessorWatermark       the watermark it published on release, or {@link Long#MIN_VALUE}
 * @param predecessorWatermarkSignedAt the service's time when that watermark was published (the release), or
 *                                   {@link Long#MIN_VALUE}
 * @param holder                     who holds the lease
 * @param principal                  the authenticated principal that took it, or null where none is known
 */
public record Witness(WitnessEvent event, String serviceId, KeyId keyId, String name, long generation, LeaseMode mode,
        LeaseKind kind, long floor, long writableFrom, long deadline, long grantedAt, long signedTime, long radius,
        CorrelationId correlationId, CorrelationId predecessorId, Ending predecessorEnding, long predecessorEndedAt,
        long predecessorWatermark, long predecessorWatermarkSignedAt, HolderId holder, String principal) {

    /** The first four bytes of an encoded witness, {@code LHWT}. */
    public static final int MAGIC = 0x4C485754;
    /** The encoding version {@link #encode()} writes and {@link #decode(byte[])} reads. */
    public static final int VERSION = 1;
    /** The longest service id, holder part or principal in UTF-8 bytes. */
    public static final int MAX_TEXT = 1024;
    /** The longest lease name in UTF-8 bytes (as in a frame). */
    public static final int MAX_NAME = 512;

    public Witness {
        Objects.requireNonNull(event, "Witness.event");
        Objects.requireNonNull(serviceId, "Witness.serviceId");
        Objects.requireNonNull(keyId, "Witness.keyId");
        Objects.requireNonNull(name, "Witness.name");
        Objects.requireNonNull(mode, "Witness.mode");
        Objects.requireNonNull(kind, "Witness.kind");
        Objects.requireNonNull(correlationId, "Witness.correlationId");
        Objects.requireNonNull(predecessorId, "Witness.predecessorId");
        Objects.requireNonNull(predecessorEnding, "Witness.predecessorEnding");
        Objects.requireNonNull(holder, "Witness.holder");
    }

    /** This witness signed by another key. */
    public Witness withKeyId(KeyId other) {
        return new Witness(event, serviceId, other, name, generation, mode, kind, floor, writableFrom, deadline,
                grantedAt, signedTime, radius, correlationId, predecessorId, predecessorEnding, predecessorEndedAt,
                predecessorWatermark, predecessorWatermarkSignedAt, holder, principal);
    }

    /** The canonical bytes (FORMAT.md, "Witness"). */
    public byte[] encode() {
        byte[] service = Codec.utf8(serviceId);
        byte[] nameBytes = Codec.utf8(name);
        byte[] process = Codec.utf8(holder.process());
        byte[] owner = Codec.utf8(holder.owner());
        byte[] principalBytes = Codec.utf8(principal);
        // 141 bytes of fixed fields, five texts of a 2-byte length each: the buffer is filled exactly.
        Codec.Out o = new Codec.Out(141 + 2 * 5 + service.length + nameBytes.length + process.length + owner.length
                + principalBytes.length);
        o.i32(MAGIC).u8(VERSION).u8(event.code());
        o.i64(keyId.high()).i64(keyId.low());
        o.sized16(service, MAX_TEXT, "the service id");
        o.sized16(nameBytes, MAX_NAME, "the lease name");
        o.i64(generation);
        o.u8(mode.type().ordinal()).i32(mode.permits());
        o.u8(kind == LeaseKind.FULL ? 1 : 0);
        o.i64(floor).i64(writableFrom).i64(deadline).i64(grantedAt);
        o.i64(signedTime).i64(radius);
        o.i64(correlationId.high()).i64(correlationId.low());
        o.i64(predecessorId.high()).i64(predecessorId.low());
        o.u8(predecessorEnding.ordinal());
        o.i64(predecessorEndedAt).i64(predecessorWatermark).i64(predecessorWatermarkSignedAt);
        o.sized16(process, MAX_TEXT, "the holder's process");
        o.sized16(owner, MAX_TEXT, "the holder's owner");
        o.sized16(principalBytes, MAX_TEXT, "the principal");
        return o.toByteArray();
    }

    /** Decodes {@link #encode()}'s bytes; refuses anything else, naming the field. */
    public static Witness decode(byte[] bytes) throws AuditFormatException {
        Codec.In in = new Codec.In(bytes, "witness");
        in.magic(MAGIC, "LHWT");
        in.version(VERSION);
        WitnessEvent event = WitnessEvent.ofCode(in.u8("event"));
        KeyId key = new KeyId(in.i64("key id"), in.i64("key id"));
        String service = in.text("service id", MAX_TEXT);
        String name = in.text("name", MAX_NAME);
        long generation = in.i64("generation");
        int type = in.u8("mode");
        int permits = in.i32("permits");
        if (type >= LeaseMode.Type.values().length) {
            throw new AuditFormatException("unknown lease mode code " + type + " in a witness (known: 0 to 2)");
        }
        LeaseMode mode = new LeaseMode(LeaseMode.Type.values()[type], permits);
        int kindCode = in.u8("kind");
        if (kindCode > 1) {
            throw new AuditFormatException("unknown lease kind code " + kindCode + " in a witness (known: 0, 1)");
        }
        long floor = in.i64("floor");
        long writableFrom = in.i64("writable from");
        long deadline = in.i64("deadline");
        long grantedAt = in.i64("granted at");
        long signedTime = in.i64("signed time");
        long radius = in.i64("radius");
        CorrelationId id = new CorrelationId(in.i64("correlation id"), in.i64("correlation id"));
        CorrelationId pred = new CorrelationId(in.i64("predecessor id"), in.i64("predecessor id"));
        int ending = in.u8("predecessor ending");
        if (ending >= Ending.values().length) {
            throw new AuditFormatException("unknown ending code " + ending + " in a witness (known: 0 to "
                    + (Ending.values().length - 1) + ")");
        }
        long endedAt = in.i64("predecessor ended at");
        long watermark = in.i64("predecessor watermark");
        long watermarkAt = in.i64("predecessor watermark signed at");
        HolderId holder = new HolderId(in.text("holder process", MAX_TEXT), in.text("holder owner", MAX_TEXT));
        String principal = in.text("principal", MAX_TEXT);
        in.end();
        return new Witness(event, service, key, name, generation, mode, kindCode == 1 ? LeaseKind.FULL
                : LeaseKind.TENTATIVE, floor, writableFrom, deadline, grantedAt, signedTime, radius, id, pred,
                Ending.values()[ending], endedAt, watermark, watermarkAt, holder,
                principal.isEmpty() ? null : principal);
    }
}
