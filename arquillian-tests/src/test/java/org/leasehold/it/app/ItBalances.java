package org.leasehold.it.app;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;

import jakarta.enterprise.context.ApplicationScoped;

import org.leasehold.bag.Message;
import org.leasehold.bag.ViewDefinition;

/**
 * A view the test application defines as a bean: a balance per account from the messages {@code view <from> <to>
 * <amount>} ({@code -} as {@code from} for a deposit); other messages of the log leave it as it is. Text lines in
 * account order: deterministic.
 */
@ApplicationScoped
public class ItBalances implements ViewDefinition<TreeMap<String, Long>> {
    static final String NAME = "it-balances";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public String version() {
        return "it balances 1";
    }

    @Override
    public TreeMap<String, Long> initial() {
        return new TreeMap<>();
    }

    @Override
    public TreeMap<String, Long> apply(TreeMap<String, Long> state, Message m) {
        String[] f = new String(m.payload(), StandardCharsets.UTF_8).split(" ");
        if (f.length == 4 && f[0].equals("view")) {
            long amount = Long.parseLong(f[3]);
            if (!f[1].equals("-")) {
                state.merge(f[1], -amount, Long::sum);
            }
            state.merge(f[2], amount, Long::sum);
        }
        return state;
    }

    @Override
    public byte[] encode(TreeMap<String, Long> state) {
        StringBuilder b = new StringBuilder();
        for (Map.Entry<String, Long> e : state.entrySet()) {
            b.append(e.getKey()).append(' ').append(e.getValue()).append('\n');
        }
        return b.toString().getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public TreeMap<String, Long> decode(byte[] bytes) {
        TreeMap<String, Long> state = new TreeMap<>();
        for (String line : new String(bytes, StandardCharsets.UTF_8).split("\n")) {
            if (!line.isEmpty()) {
                int sp = line.lastIndexOf(' ');
                state.put(line.substring(0, sp), Long.parseLong(line.substring(sp + 1)));
            }
        }
        return state;
    }
}
