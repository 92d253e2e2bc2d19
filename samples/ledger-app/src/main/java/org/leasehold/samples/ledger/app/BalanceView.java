package org.leasehold.samples.ledger.app;

import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.Map;
import java.util.TreeMap;

import jakarta.enterprise.context.ApplicationScoped;

import org.leasehold.bag.Message;
import org.leasehold.bag.ViewDefinition;

/**
 * The ledger's view: per account its balance and the timestamp of its last entry, folded from the log in order. The
 * adapter publishes snapshots of it in the bag store; a restarted server reads the latest snapshot and the entries
 * after it instead of the whole log. The encoding is deterministic: accounts in ascending order, fixed-width fields.
 */
@ApplicationScoped
public class BalanceView implements ViewDefinition<TreeMap<Integer, BalanceView.Account>> {

    /** An account's balance and the timestamp of the last entry that changed it (microseconds since the epoch). */
    public record Account(long balance, long throughMicros) {
        Instant through() {
            return Instant.ofEpochSecond(Math.floorDiv(throughMicros, 1_000_000L),
                    Math.floorMod(throughMicros, 1_000_000L) * 1_000L);
        }
    }

    @Override
    public String name() {
        return "balances";
    }

    @Override
    public String version() {
        return "ledger balances 1";
    }

    @Override
    public TreeMap<Integer, Account> initial() {
        return new TreeMap<>();
    }

    @Override
    public TreeMap<Integer, Account> apply(TreeMap<Integer, Account> state, Message m) {
        Entry e = Entry.parse(m.payload());
        long micros = m.timestamp().getEpochSecond() * 1_000_000L + m.timestamp().getNano() / 1_000;
        for (int account : e.kind().equals("open") ? new int[] {e.from()} : new int[] {e.from(), e.to()}) {
            Account a = state.get(account);
            state.put(account, new Account((a == null ? 0 : a.balance()) + e.delta(account), micros));
        }
        return state;
    }

    @Override
    public byte[] encode(TreeMap<Integer, Account> state) {
        ByteBuffer b = ByteBuffer.allocate(4 + state.size() * 20).putInt(state.size());
        for (Map.Entry<Integer, Account> e : state.entrySet()) {
            b.putInt(e.getKey()).putLong(e.getValue().balance()).putLong(e.getValue().throughMicros());
        }
        return b.array();
    }

    @Override
    public TreeMap<Integer, Account> decode(byte[] bytes) {
        ByteBuffer b = ByteBuffer.wrap(bytes);
        int n = b.getInt();
        if (n < 0 || b.remaining() != n * 20L) {
            throw new IllegalArgumentException("not a ledger balances state: " + n + " accounts in " + bytes.length
                    + " bytes");
        }
        TreeMap<Integer, Account> state = new TreeMap<>();
        for (int i = 0; i < n; i++) {
            state.put(b.getInt(), new Account(b.getLong(), b.getLong()));
        }
        return state;
    }
}
