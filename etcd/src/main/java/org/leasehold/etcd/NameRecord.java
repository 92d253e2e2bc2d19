package org.leasehold.etcd;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;

import org.leasehold.lease.CorrelationId;
import org.leasehold.lease.Ending;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseMode;
import org.leasehold.lease.MetadataEntry;
import org.leasehold.lease.Predecessor;
import org.leasehold.time.Micros;

/**
 * Everything the service keeps of one name, as one etcd value: floor, writable-from, the predecessor the next grant
 * reports, the current holders and the bounded metadata history. Times in microseconds of service time.
 *
 * <p><b>Generations.</b> A grant's generation is the etcd revision of the transaction that wrote it. The value
 * cannot contain its own revision, so a grant writes its entries with generation {@link #PENDING}; whoever reads the
 * value resolves them to the key's modification revision, which is that transaction's revision (a later write
 * resolves them before it writes). Revisions strictly increase across the whole cluster and its restarts, so a
 * name's generations do too.
 */
final class NameRecord {
    /** The generation of an entry written by the transaction that wrote this value. */
    static final long PENDING = 0;
    private static final byte VERSION = 1;
    private static final long NONE = Long.MIN_VALUE;

    /** One current holder of the name. */
    static final class Holder {
        HolderId holder;
        LeaseMode mode;
        LeaseKind kind;
        long age;
        long grantedAt;
        long deadline;
        long floor;
        long generation;
        CorrelationId id;
        int nameCount;
        /** While held in doubt, until when; otherwise {@link Long#MIN_VALUE}. */
        long inDoubtUntil = NONE;

        /** The deadline at {@code now}: a lease held in doubt is renewed by the service up to its hold's end. */
        long deadlineAt(long now, long maxLease) {
            if (inDoubtUntil == NONE) {
                return deadline;
            }
            return Math.max(deadline, Math.min(inDoubtUntil, Micros.plus(now, maxLease)));
        }

        /** True if this holder is younger than a requester of age {@code otherAge} (ties by identity), as the engine. */
        boolean youngerThan(long otherAge, HolderId other) {
            if (age != otherAge) {
                return age > otherAge;
            }
            return holder.toString().compareTo(other.toString()) > 0;
        }
    }

    /** One history entry. */
    record Entry(CorrelationId id, long generation, HolderId holder, Ending ending, long at, long watermark,
            String metadata) {
        MetadataEntry toApi() {
            return new MetadataEntry(id, generation, holder, ending, Micros.toInstant(at),
                    watermark == NONE ? null : Micros.toInstant(watermark), metadata);
        }
    }

    final String name;
    /** The key's modification revision when read (0: the key did not exist). */
    long modRevision;
    long generation;
    long floor;
    long writableFrom = NONE;
    CorrelationId predId = CorrelationId.NONE;
    Ending predEnding = Ending.UNKNOWN;
    long predAt;
    long predWatermark = NONE;
    String predMetadata;
    long idCounter;
    final List<Holder> holders = new ArrayList<>(2);
    final List<Entry> history = new ArrayList<>();
    /** Changed since read: to be written. */
    boolean dirty;

    NameRecord(String name) {
        this.name = name;
    }

    /** A name the service has never written: its floor is {@code initialFloor}. */
    static NameRecord fresh(String name, long initialFloor) {
        NameRecord r = new NameRecord(name);
        r.floor = initialFloor;
        r.predAt = initialFloor;
        return r;
    }

    void raiseFloor(long v) {
        if (v > floor) {
            floor = v;
        }
    }

    void raiseWritableFrom(long v) {
        if (v > writableFrom) {
            writableFrom = v;
        }
    }

    Predecessor predecessor() {
        return new Predecessor(predId, predEnding, Micros.toInstant(predAt),
                predWatermark == NONE ? null : Micros.toInstant(predWatermark), predMetadata);
    }

    /** Records that holder {@code h} ended: the next grant's predecessor and a history entry. */
    void ended(Holder h, Ending ending, long at, long watermark, String metadata, int capacity) {
        predId = h.id;
        predEnding = ending;
        predAt = at;
        predWatermark = watermark;
        predMetadata = metadata;
        record(new Entry(h.id, h.generation, h.holder, ending, at, watermark, metadata), capacity);
    }

    void record(Entry e, int capacity) {
        history.add(e);
        while (history.size() > capacity) {
            history.remove(0);
        }
        dirty = true;
    }

    /** How the grant of generation {@code gen} ended, if the history still says, else null. */
    Entry endingOf(long gen) {
        for (Entry e : history) {
            if (e.generation == gen && e.ending != null) {
                return e;
            }
        }
        return null;
    }

    Holder holderOf(long gen) {
        for (Holder h : holders) {
            if (h.generation == gen) {
                return h;
            }
        }
        return null;
    }

    // ------------------------------------------------------------------------------------------------ codec

    byte[] encode() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(256);
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(VERSION);
            out.writeLong(generation);
            out.writeLong(floor);
            out.writeLong(writableFrom);
            writeId(out, predId);
            out.writeByte(predEnding.ordinal());
            out.writeLong(predAt);
            out.writeLong(predWatermark);
            writeText(out, predMetadata);
            out.writeLong(idCounter);
            out.writeInt(holders.size());
            for (Holder h : holders) {
                writeHolderId(out, h.holder);
                out.writeByte(h.mode.type().ordinal());
                out.writeInt(h.mode.permits());
                out.writeByte(h.kind.ordinal());
                out.writeLong(h.age);
                out.writeLong(h.grantedAt);
                out.writeLong(h.deadline);
                out.writeLong(h.floor);
                out.writeLong(h.generation);
                writeId(out, h.id);
                out.writeInt(h.nameCount);
                out.writeLong(h.inDoubtUntil);
            }
            out.writeInt(history.size());
            for (Entry e : history) {
                writeId(out, e.id);
                out.writeLong(e.generation);
                writeHolderId(out, e.holder);
                out.writeByte(e.ending == null ? -1 : e.ending.ordinal());
                out.writeLong(e.at);
                out.writeLong(e.watermark);
                writeText(out, e.metadata);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    /** Decodes a value read at {@code modRevision}, resolving the entries its own write made. */
    static NameRecord decode(String name, byte[] value, long modRevision) {
        NameRecord r = new NameRecord(name);
        r.modRevision = modRevision;
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(value))) {
            byte version = in.readByte();
            if (version != VERSION) {
                throw new IllegalStateException("the etcd value of lease name '" + name + "' has format version "
                        + version + "; this service reads version " + VERSION
                        + ": run one Leasehold version against a key prefix");
            }
            r.generation = resolve(in.readLong(), modRevision);
            r.floor = in.readLong();
            r.writableFrom = in.readLong();
            r.predId = readId(in);
            r.predEnding = Ending.values()[in.readByte()];
            r.predAt = in.readLong();
            r.predWatermark = in.readLong();
            r.predMetadata = readText(in);
            r.idCounter = in.readLong();
            int n = in.readInt();
            for (int i = 0; i < n; i++) {
                Holder h = new Holder();
                h.holder = readHolderId(in);
                LeaseMode.Type type = LeaseMode.Type.values()[in.readByte()];
                int permits = in.readInt();
                h.mode = type == LeaseMode.Type.EXCLUSIVE ? LeaseMode.EXCLUSIVE
                        : type == LeaseMode.Type.SHARED ? LeaseMode.SHARED : LeaseMode.semaphore(permits);
                h.kind = LeaseKind.values()[in.readByte()];
                h.age = in.readLong();
                h.grantedAt = in.readLong();
                h.deadline = in.readLong();
                h.floor = in.readLong();
                h.generation = resolve(in.readLong(), modRevision);
                h.id = readId(in);
                h.nameCount = in.readInt();
                h.inDoubtUntil = in.readLong();
                r.holders.add(h);
            }
            int m = in.readInt();
            for (int i = 0; i < m; i++) {
                CorrelationId id = readId(in);
                long gen = resolve(in.readLong(), modRevision);
                HolderId holder = readHolderId(in);
                byte ending = in.readByte();
                r.history.add(new Entry(id, gen, holder, ending < 0 ? null : Ending.values()[ending], in.readLong(),
                        in.readLong(), readText(in)));
            }
        } catch (IOException | RuntimeException e) {
            if (e instanceof IllegalStateException ise) {
                throw ise;
            }
            throw new IllegalStateException("the etcd value of lease name '" + name + "' (revision " + modRevision
                    + ") cannot be read: it was not written by this service, or the key prefix is shared with "
                    + "another program; give each its own prefix", e);
        }
        return r;
    }

    private static long resolve(long generation, long modRevision) {
        return generation == PENDING ? modRevision : generation;
    }

    private static void writeId(DataOutputStream out, CorrelationId id) throws IOException {
        out.writeLong(id.high());
        out.writeLong(id.low());
    }

    private static CorrelationId readId(DataInputStream in) throws IOException {
        long high = in.readLong();
        long low = in.readLong();
        return high == 0 && low == 0 ? CorrelationId.NONE : new CorrelationId(high, low);
    }

    private static void writeHolderId(DataOutputStream out, HolderId h) throws IOException {
        out.writeUTF(h.process());
        out.writeUTF(h.owner());
    }

    private static HolderId readHolderId(DataInputStream in) throws IOException {
        return new HolderId(in.readUTF(), in.readUTF());
    }

    private static void writeText(DataOutputStream out, String s) throws IOException {
        out.writeBoolean(s != null);
        if (s != null) {
            byte[] b = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
            out.writeInt(b.length);
            out.write(b);
        }
    }

    private static String readText(DataInputStream in) throws IOException {
        if (!in.readBoolean()) {
            return null;
        }
        byte[] b = new byte[in.readInt()];
        in.readFully(b);
        return new String(b, java.nio.charset.StandardCharsets.UTF_8);
    }
}
