package org.leasehold.store;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import org.leasehold.bag.Message;
import org.leasehold.bag.StampedLease;
import org.leasehold.bag.ViewDefinition;

/**
 * A test view: per lease name the number of messages and payload bytes, and a chain over every message's identity
 * and payload in fold order (so a different order or a missed or repeated message changes the state). A non-zero
 * {@code salt} is appended to every encoding: two instances with different salts encode the same state differently,
 * as a non-deterministic definition would.
 */
final class TallyView implements ViewDefinition<TallyView.State> {
    private final String name;
    private final String version;
    private final Set<String> names;
    private final int salt;

    /** The tallies and the chain. */
    static final class State {
        final TreeMap<String, long[]> perName = new TreeMap<>();
        long messages;
        long chain = 17;
    }

    TallyView(String name, String version, Set<String> names, int salt) {
        this.name = name;
        this.version = version;
        this.names = names;
        this.salt = salt;
    }

    TallyView(String name) {
        this(name, "tally 1", Set.of(), 0);
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public String version() {
        return version;
    }

    @Override
    public Set<String> leaseNames() {
        return names;
    }

    @Override
    public State initial() {
        return new State();
    }

    @Override
    public State apply(State s, Message m) {
        s.messages++;
        for (StampedLease l : m.leases()) {
            long[] t = s.perName.computeIfAbsent(l.name(), k -> new long[2]);
            t[0]++;
            t[1] += m.payloadLength();
        }
        s.chain = s.chain * 1_000_003 + m.timestamp().hashCode();
        s.chain = s.chain * 1_000_003 + (m.writer() + m.file() + m.offset() + "#" + m.index()).hashCode();
        s.chain = s.chain * 1_000_003 + m.payloadBuffer().hashCode();
        return s;
    }

    @Override
    public byte[] encode(State s) {
        int size = 20 + (salt != 0 ? 4 : 0);
        for (String n : s.perName.keySet()) {
            size += 2 + n.getBytes(StandardCharsets.UTF_8).length + 16;
        }
        ByteBuffer b = ByteBuffer.allocate(size).putLong(s.messages).putLong(s.chain).putInt(s.perName.size());
        for (Map.Entry<String, long[]> e : s.perName.entrySet()) {
            byte[] n = e.getKey().getBytes(StandardCharsets.UTF_8);
            b.putShort((short) n.length).put(n).putLong(e.getValue()[0]).putLong(e.getValue()[1]);
        }
        if (salt != 0) {
            b.putInt(salt);
        }
        return b.array();
    }

    @Override
    public State decode(byte[] bytes) {
        ByteBuffer b = ByteBuffer.wrap(bytes);
        State s = new State();
        s.messages = b.getLong();
        s.chain = b.getLong();
        int n = b.getInt();
        for (int i = 0; i < n; i++) {
            byte[] k = new byte[b.getShort()];
            b.get(k);
            s.perName.put(new String(k, StandardCharsets.UTF_8), new long[] {b.getLong(), b.getLong()});
        }
        if (salt != 0) {
            b.getInt();
        }
        if (b.hasRemaining()) {
            throw new IllegalArgumentException(b.remaining() + " bytes after the state");
        }
        return s;
    }
}
