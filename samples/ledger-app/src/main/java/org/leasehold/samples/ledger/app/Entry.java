package org.leasehold.samples.ledger.app;

import java.nio.charset.StandardCharsets;

/**
 * One journal entry as stored in the log: {@code open <account> <amount>} or
 * {@code transfer <from> <to> <amount>}, in UTF-8.
 */
record Entry(String kind, int from, int to, long amount) {

    static Entry open(int account, long amount) {
        return new Entry("open", account, account, amount);
    }

    static Entry transfer(int from, int to, long amount) {
        return new Entry("transfer", from, to, amount);
    }

    byte[] bytes() {
        String text = kind.equals("open") ? "open " + from + " " + amount : "transfer " + from + " " + to + " " + amount;
        return text.getBytes(StandardCharsets.UTF_8);
    }

    static Entry parse(byte[] payload) {
        String[] f = new String(payload, StandardCharsets.UTF_8).split(" ");
        if (f.length == 3 && f[0].equals("open")) {
            return open(Integer.parseInt(f[1]), Long.parseLong(f[2]));
        }
        if (f.length == 4 && f[0].equals("transfer")) {
            return transfer(Integer.parseInt(f[1]), Integer.parseInt(f[2]), Long.parseLong(f[3]));
        }
        throw new IllegalArgumentException("not a ledger entry: " + new String(payload, StandardCharsets.UTF_8));
    }

    /** The change this entry makes to {@code account}'s balance. */
    long delta(int account) {
        if (kind.equals("open")) {
            return account == from ? amount : 0;
        }
        return (account == from ? -amount : 0) + (account == to ? amount : 0);
    }

    static String leaseName(int account) {
        return "ledger/account/" + account;
    }
}
