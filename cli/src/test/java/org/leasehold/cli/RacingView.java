package org.leasehold.cli;

import java.nio.ByteBuffer;

import org.leasehold.bag.Message;
import org.leasehold.bag.ViewDefinition;

/**
 * A view definition that is not deterministic: each instance appends its own salt to the encoding. Before its first
 * encoding, an instance runs {@link #beforeEncode} once if set: a test publishes a snapshot there through another
 * store, as another builder racing this one would.
 */
public final class RacingView implements ViewDefinition<long[]> {
    /** Run (and cleared) before the first encoding of any instance. */
    static volatile Runnable beforeEncode;
    private static int instances;
    private final int salt;

    public RacingView() {
        synchronized (RacingView.class) {
            salt = ++instances;
        }
    }

    @Override
    public String name() {
        return "racing";
    }

    @Override
    public String version() {
        return "racing 1";
    }

    @Override
    public long[] initial() {
        return new long[1];
    }

    @Override
    public long[] apply(long[] s, Message m) {
        s[0]++;
        return s;
    }

    @Override
    public byte[] encode(long[] s) {
        Runnable r = beforeEncode;
        beforeEncode = null;
        if (r != null) {
            r.run();
        }
        return ByteBuffer.allocate(12).putLong(s[0]).putInt(salt).array();
    }

    @Override
    public long[] decode(byte[] bytes) {
        return new long[] {ByteBuffer.wrap(bytes).getLong()};
    }
}
