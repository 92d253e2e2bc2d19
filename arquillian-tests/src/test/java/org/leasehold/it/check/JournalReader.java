package org.leasehold.it.check;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import java.util.zip.CRC32C;

/**
 * An independent reader of the resource adapter's prepare journal, written from the "Prepare journal" section of
 * docs/FORMAT.md: it uses no adapter class, so the tests judge recovery from the stored bytes, not from the adapter's
 * own bookkeeping.
 */
public final class JournalReader {

    /** Record types, by their code. */
    public enum Type {
        PREPARED, COMMITTED, ROLLED_BACK, HEURISTIC_ROLLBACK, HEURISTIC_COMMIT, FORGOTTEN;

        static Type of(int code) {
            return code >= 1 && code <= 6 ? values()[code - 1] : null;
        }
    }

    /** A lease of a PREPARED record. */
    public record Lease(String name, long generation, long floorMicros, long deadlineMicros) {
    }

    /** One record. {@code xid} is {@code formatId:gtrid-hex:bqual-hex}. */
    public record Record(String file, Type type, long atMicros, String xid, List<Lease> leases, List<String> messages) {
    }

    /** A branch: its records in order. */
    public record Branch(String xid, List<Record> records) {

        /** The state its last record gives it. */
        public Type state() {
            return records.get(records.size() - 1).type();
        }

        /** The messages its PREPARED record promised, or an empty list. */
        public List<String> messages() {
            for (Record r : records) {
                if (r.type() == Type.PREPARED) {
                    return r.messages();
                }
            }
            return List.of();
        }

        /** The leases of its PREPARED record, or an empty list. */
        public List<Lease> leases() {
            for (Record r : records) {
                if (r.type() == Type.PREPARED) {
                    return r.leases();
                }
            }
            return List.of();
        }

        public boolean wasPrepared() {
            return records.stream().anyMatch(r -> r.type() == Type.PREPARED);
        }
    }

    /** What a journal directory holds. */
    public record Journal(List<Record> records, List<String> tornTails) {

        /** Branches by XID, in the order of their first record. */
        public Map<String, Branch> branches() {
            Map<String, List<Record>> by = new LinkedHashMap<>();
            for (Record r : records) {
                by.computeIfAbsent(r.xid(), k -> new ArrayList<>()).add(r);
            }
            Map<String, Branch> out = new LinkedHashMap<>();
            by.forEach((x, rs) -> out.put(x, new Branch(x, List.copyOf(rs))));
            return out;
        }

        /** The branches whose PREPARED record promised a message equal to {@code text}. */
        public List<Branch> promising(String text) {
            List<Branch> out = new ArrayList<>();
            for (Branch b : branches().values()) {
                if (b.messages().contains(text)) {
                    out.add(b);
                }
            }
            return out;
        }
    }

    private static final int MAGIC = 0x4C484A31;

    private JournalReader() {
    }

    /** The journal directory of {@code writer} for {@code log} under the bag store {@code root}. */
    public static Path dir(Path root, String log, String writer) {
        return root.resolve(".leasehold").resolve("journal").resolve(log).resolve(writer);
    }

    /** Reads every {@code journal.<n>} of {@code dir} in ascending {@code n}; an absent directory is empty. */
    public static Journal read(Path dir) throws IOException {
        List<Record> records = new ArrayList<>();
        List<String> torn = new ArrayList<>();
        if (!Files.isDirectory(dir)) {
            return new Journal(records, torn);
        }
        List<Integer> numbers = new ArrayList<>();
        try (Stream<Path> s = Files.list(dir)) {
            s.map(p -> p.getFileName().toString()).filter(n -> n.matches("journal\\.[0-9]+"))
                    .forEach(n -> numbers.add(Integer.parseInt(n.substring("journal.".length()))));
        }
        numbers.sort(null);
        for (int n : numbers) {
            String name = "journal." + n;
            ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(dir.resolve(name)));
            while (b.hasRemaining()) {
                int start = b.position();
                if (b.remaining() < 12) {
                    torn.add(name + "@" + start + ": " + b.remaining() + " bytes, shorter than a record header");
                    break;
                }
                int magic = b.getInt();
                int len = b.getInt();
                long crc = b.getInt() & 0xFFFFFFFFL;
                if (magic != MAGIC || len < 0 || len > b.remaining()) {
                    torn.add(name + "@" + start + ": bad magic or length");
                    break;
                }
                byte[] body = new byte[len];
                b.get(body);
                CRC32C c = new CRC32C();
                c.update(body);
                if (c.getValue() != crc) {
                    torn.add(name + "@" + start + ": checksum mismatch");
                    break;
                }
                Record r = parse(name, ByteBuffer.wrap(body));
                if (r != null) {
                    records.add(r);
                }
            }
        }
        return new Journal(records, torn);
    }

    private static Record parse(String file, ByteBuffer b) {
        Type type = Type.of(b.get() & 0xFF);
        long at = b.getLong();
        int formatId = b.getInt();
        byte[] gtrid = new byte[b.get() & 0xFF];
        b.get(gtrid);
        byte[] bqual = new byte[b.get() & 0xFF];
        b.get(bqual);
        int leaseCount = b.getShort() & 0xFFFF;
        List<Lease> leases = new ArrayList<>();
        for (int i = 0; i < leaseCount; i++) {
            byte[] name = new byte[b.getShort() & 0xFFFF];
            b.get(name);
            long generation = b.getLong();
            long floor = b.getLong();
            long deadline = b.getLong();
            b.getLong(); // writableFrom
            b.getLong(); // predecessor's expiry
            leases.add(new Lease(new String(name, StandardCharsets.UTF_8), generation, floor, deadline));
        }
        int count = b.getInt();
        List<String> messages = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            byte[] p = new byte[b.getInt()];
            b.get(p);
            messages.add(new String(p, StandardCharsets.UTF_8));
        }
        if (type == null) {
            return null;
        }
        HexFormat hex = HexFormat.of();
        String xid = formatId + ":" + hex.formatHex(gtrid) + ":" + hex.formatHex(bqual);
        return new Record(file, type, at, xid, List.copyOf(leases), List.copyOf(messages));
    }
}
