package org.leasehold.adapter;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;

import org.leasehold.bag.LeaseStamp;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.lease.CorrelationId;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.LeaseMode;
import org.leasehold.time.Micros;

/**
 * The durable record of prepared transaction branches, one journal per writer identity: what a branch promised to
 * write (its lease stamps and messages) when it voted to commit, and how it ended. Recovery reads it back.
 *
 * <p>Layout: {@code <root>/.leasehold/journal/<log>/<writer>/journal.<n>}, a new file each time the journal is
 * opened (so a torn tail of an earlier run is never appended to). Each record is
 * {@code magic "LHJ1" | body length (int) | CRC32C of body (int) | body}; a record whose length or checksum does not
 * match ends the file (a torn tail). The files are append-only, single-writer (the writer identity is held by one
 * process), and go through {@link NfsSafeFiles} like the bag store itself.
 */
final class PrepareJournal implements AutoCloseable {
    private static final int MAGIC = 0x4c484a31; // "LHJ1"
    private static final String PREFIX = "journal.";

    /** Record types. */
    enum Type {
        PREPARED(1), COMMITTED(2), ROLLED_BACK(3), HEURISTIC_ROLLBACK(4), HEURISTIC_COMMIT(5), FORGOTTEN(6);

        final byte code;

        Type(int code) {
            this.code = (byte) code;
        }

        static Type of(byte code) {
            for (Type t : values()) {
                if (t.code == code) {
                    return t;
                }
            }
            return null;
        }
    }

    /**
     * What a prepared branch's recovery needs to hold its leases again: the holder, and per lease stamp (same order)
     * its mode and correlation id. Null for records written before the journal kept it.
     */
    record Holding(HolderId holder, List<LeaseMode> modes, List<CorrelationId> ids) {
    }

    /** A branch as the journal remembers it. */
    record Entry(XidKey xid, Type state, Instant preparedAt, List<LeaseStamp> leases, List<byte[]> payloads,
            Holding holding) {
        boolean undecided() {
            return state == Type.PREPARED;
        }

        boolean heuristic() {
            return state == Type.HEURISTIC_ROLLBACK || state == Type.HEURISTIC_COMMIT;
        }
    }

    private final NfsSafeFiles fs;
    private final Path dir;
    private final Map<XidKey, Entry> entries = new LinkedHashMap<>();
    private final FileChannel out;
    private final Path file;

    /** Opens (creating if needed) the journal of {@code writer} for {@code log} and reads what it holds. */
    PrepareJournal(NfsSafeFiles fs, Path root, String log, String writer) throws IOException {
        this.fs = fs;
        Path base = root.resolve(".leasehold");
        fs.createDirectory(base);
        Path journals = base.resolve("journal");
        fs.createDirectory(journals);
        Path perLog = journals.resolve(log);
        fs.createDirectory(perLog);
        this.dir = perLog.resolve(writer);
        fs.createDirectory(dir);
        int last = 0;
        List<Integer> seqs = new ArrayList<>();
        for (String name : fs.list(dir)) {
            if (name.startsWith(PREFIX)) {
                try {
                    int n = Integer.parseInt(name.substring(PREFIX.length()));
                    seqs.add(n);
                    last = Math.max(last, n);
                } catch (NumberFormatException e) {
                    // Not a journal file (an operator's note, say): ignored.
                }
            }
        }
        Collections.sort(seqs);
        for (int n : seqs) {
            readFile(dir.resolve(PREFIX + n));
        }
        FileChannel created = null;
        Path f = null;
        for (int n = last + 1; created == null; n++) {
            f = dir.resolve(PREFIX + n);
            try {
                created = fs.createNew(f);
            } catch (FileAlreadyExistsException e) {
                // Another file appeared since the listing (should not happen with one writer): take the next number.
            }
        }
        this.out = created;
        this.file = f;
    }

    Path file() {
        return file;
    }

    /** The branches that were prepared and not decided, plus heuristic outcomes not yet forgotten. */
    synchronized List<Entry> unresolved() {
        List<Entry> out = new ArrayList<>();
        for (Entry e : entries.values()) {
            if (e.undecided() || e.heuristic()) {
                out.add(e);
            }
        }
        return out;
    }

    synchronized Entry get(XidKey xid) {
        return entries.get(xid);
    }

    /** Durably records that {@code xid} promised to write {@code payloads} under {@code leases}. */
    synchronized void prepared(XidKey xid, Instant at, List<LeaseStamp> leases, List<byte[]> payloads, Holding holding)
            throws IOException {
        ByteBuffer body = encode(Type.PREPARED, xid, at, leases, payloads, holding);
        write(body);
        entries.put(xid, new Entry(xid, Type.PREPARED, at, leases, payloads, holding));
    }

    /** Durably records how {@code xid} ended. */
    synchronized void outcome(XidKey xid, Type type, Instant at) throws IOException {
        write(encode(type, xid, at, List.of(), List.of(), null));
        Entry e = entries.get(xid);
        if (type == Type.FORGOTTEN || type == Type.COMMITTED || type == Type.ROLLED_BACK) {
            entries.remove(xid);
        } else if (e != null) {
            entries.put(xid, new Entry(xid, type, e.preparedAt(), e.leases(), e.payloads(), e.holding()));
        } else {
            entries.put(xid, new Entry(xid, type, at, List.of(), List.of(), null));
        }
    }

    private void write(ByteBuffer body) throws IOException {
        CRC32C crc = new CRC32C();
        crc.update(body.duplicate());
        ByteBuffer header = ByteBuffer.allocate(12);
        header.putInt(MAGIC).putInt(body.remaining()).putInt((int) crc.getValue()).flip();
        long pos = out.size();
        ByteBuffer[] both = {header, body};
        while (header.hasRemaining() || body.hasRemaining()) {
            pos += out.write(both[header.hasRemaining() ? 0 : 1], pos);
        }
        out.force(false);
    }

    private static ByteBuffer encode(Type type, XidKey xid, Instant at, List<LeaseStamp> leases, List<byte[]> payloads,
            Holding holding) {
        int size = 1 + 8 + 4 + 1 + xid.gtrid().length + 1 + xid.bqual().length + 2 + 4;
        List<byte[]> names = new ArrayList<>(leases.size());
        for (LeaseStamp s : leases) {
            byte[] n = s.name().getBytes(StandardCharsets.UTF_8);
            names.add(n);
            size += 2 + n.length + 8 * 5;
        }
        for (byte[] p : payloads) {
            size += 4 + p.length;
        }
        byte[] process = null;
        byte[] owner = null;
        if (holding != null) {
            process = holding.holder().process().getBytes(StandardCharsets.UTF_8);
            owner = holding.holder().owner().getBytes(StandardCharsets.UTF_8);
            size += 2 + process.length + 2 + owner.length + leases.size() * (1 + 4 + 8 + 8);
        }
        ByteBuffer b = ByteBuffer.allocate(size);
        b.put(type.code).putLong(Micros.of(at)).putInt(xid.formatId());
        b.put((byte) xid.gtrid().length).put(xid.gtrid()).put((byte) xid.bqual().length).put(xid.bqual());
        b.putShort((short) leases.size());
        for (int i = 0; i < leases.size(); i++) {
            LeaseStamp s = leases.get(i);
            b.putShort((short) names.get(i).length).put(names.get(i)).putLong(s.generation())
                    .putLong(Micros.of(s.floor())).putLong(Micros.of(s.deadline())).putLong(Micros.of(s.writableFrom()))
                    .putLong(s.predecessorExpiredAt() == null ? Long.MIN_VALUE : Micros.of(s.predecessorExpiredAt()));
        }
        b.putInt(payloads.size());
        for (byte[] p : payloads) {
            b.putInt(p.length).put(p);
        }
        if (holding != null) {
            // Added after the payloads, so that readers of the earlier layout (which stop there) still read it.
            b.putShort((short) process.length).put(process).putShort((short) owner.length).put(owner);
            for (int i = 0; i < leases.size(); i++) {
                LeaseMode m = holding.modes().get(i);
                CorrelationId id = holding.ids().get(i);
                b.put((byte) m.type().ordinal()).putInt(m.permits()).putLong(id.high()).putLong(id.low());
            }
        }
        return b.flip();
    }

    private void readFile(Path f) throws IOException {
        byte[] all;
        try (FileChannel in = fs.openForRead(f)) {
            long size = in.size();
            if (size > Integer.MAX_VALUE) {
                throw new IOException("journal file " + f + " is larger than 2 GiB; it cannot be read");
            }
            ByteBuffer buf = ByteBuffer.allocate((int) size);
            while (buf.hasRemaining()) {
                if (in.read(buf, buf.position()) < 0) {
                    break;
                }
            }
            all = buf.array();
        } catch (NoSuchFileException e) {
            return;
        }
        ByteBuffer b = ByteBuffer.wrap(all);
        while (b.remaining() >= 12) {
            int start = b.position();
            if (b.getInt() != MAGIC) {
                break;
            }
            int len = b.getInt();
            int crc = b.getInt();
            if (len < 0 || len > b.remaining()) {
                break;
            }
            ByteBuffer body = b.slice(b.position(), len);
            CRC32C c = new CRC32C();
            c.update(body.duplicate());
            if ((int) c.getValue() != crc) {
                break;
            }
            b.position(start + 12 + len);
            apply(body);
        }
    }

    private void apply(ByteBuffer b) {
        Type type = Type.of(b.get());
        Instant at = Micros.toInstant(b.getLong());
        int formatId = b.getInt();
        byte[] gtrid = new byte[b.get() & 0xff];
        b.get(gtrid);
        byte[] bqual = new byte[b.get() & 0xff];
        b.get(bqual);
        XidKey xid = new XidKey(formatId, gtrid, bqual);
        int leaseCount = b.getShort() & 0xffff;
        List<LeaseStamp> leases = new ArrayList<>(leaseCount);
        for (int i = 0; i < leaseCount; i++) {
            byte[] n = new byte[b.getShort() & 0xffff];
            b.get(n);
            long gen = b.getLong();
            Instant floor = Micros.toInstant(b.getLong());
            Instant deadline = Micros.toInstant(b.getLong());
            Instant writableFrom = Micros.toInstant(b.getLong());
            long expired = b.getLong();
            leases.add(new LeaseStamp(new String(n, StandardCharsets.UTF_8), gen, floor, deadline, writableFrom,
                    expired == Long.MIN_VALUE ? null : Micros.toInstant(expired), null));
        }
        int payloadCount = b.getInt();
        List<byte[]> payloads = new ArrayList<>(payloadCount);
        for (int i = 0; i < payloadCount; i++) {
            byte[] p = new byte[b.getInt()];
            b.get(p);
            payloads.add(p);
        }
        Holding holding = null;
        if (b.remaining() >= 4) {
            byte[] process = new byte[b.getShort() & 0xffff];
            b.get(process);
            byte[] owner = new byte[b.getShort() & 0xffff];
            b.get(owner);
            List<LeaseMode> modes = new ArrayList<>(leaseCount);
            List<CorrelationId> ids = new ArrayList<>(leaseCount);
            for (int i = 0; i < leaseCount; i++) {
                LeaseMode.Type t = LeaseMode.Type.values()[b.get()];
                int permits = b.getInt();
                modes.add(t == LeaseMode.Type.EXCLUSIVE ? LeaseMode.EXCLUSIVE : t == LeaseMode.Type.SHARED
                        ? LeaseMode.SHARED : LeaseMode.semaphore(permits));
                ids.add(new CorrelationId(b.getLong(), b.getLong()));
            }
            holding = new Holding(new HolderId(new String(process, StandardCharsets.UTF_8),
                    new String(owner, StandardCharsets.UTF_8)), modes, ids);
        }
        if (type == null) {
            return;
        }
        if (type == Type.PREPARED) {
            entries.put(xid, new Entry(xid, type, at, leases, payloads, holding));
        } else if (type == Type.FORGOTTEN || type == Type.COMMITTED || type == Type.ROLLED_BACK) {
            entries.remove(xid);
        } else {
            Entry e = entries.get(xid);
            entries.put(xid, e == null ? new Entry(xid, type, at, List.of(), List.of(), null)
                    : new Entry(xid, type, e.preparedAt(), e.leases(), e.payloads(), e.holding()));
        }
    }

    @Override
    public synchronized void close() {
        try {
            out.close();
        } catch (IOException e) {
            // Every record was forced when written; nothing is lost by a failed close.
        }
    }
}
