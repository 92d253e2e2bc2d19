package org.leasehold.it.crash;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;

import javax.transaction.xa.XAException;
import javax.transaction.xa.XAResource;
import javax.transaction.xa.Xid;

/**
 * A test resource enlisted beside the adapter and the database: when the transaction manager reaches it in the chosen
 * phase, it records that (a marker file) and stops there. The last of the {@code expected} transactions to arrive
 * either halts the server ({@code Runtime.halt}, no shutdown hooks, like a power cut) or, in blocking mode, every one
 * waits until the test kills the server with SIGKILL. So several transactions are in doubt at one crash.
 */
public final class CrashGate implements XAResource {
    private static final System.Logger LOG = System.getLogger(CrashGate.class.getName());
    private static final AtomicInteger ARRIVED = new AtomicInteger();

    /** Where the gate stops the transaction. */
    public enum Phase { PREPARE, COMMIT }

    private final String label;
    private final Phase phase;
    private final int expected;
    private final boolean halt;
    private final Path markers;

    public CrashGate(String label, Phase phase, int expected, boolean halt, Path markers) {
        this.label = label;
        this.phase = phase;
        this.expected = expected;
        this.halt = halt;
        this.markers = markers;
    }

    private void arrive(String where, Xid xid) {
        try {
            Files.createDirectories(markers);
            Files.writeString(markers.resolve(label), where + " " + xid.getFormatId() + "\n", StandardCharsets.UTF_8);
        } catch (IOException e) {
            LOG.log(System.Logger.Level.ERROR, "could not write the marker of {0}: {1}", label, e);
        }
        int n = ARRIVED.incrementAndGet();
        LOG.log(System.Logger.Level.WARNING, "crash gate: {0} stopped in {1} ({2} of {3})", label, where, n, expected);
        if (halt && n >= expected) {
            LOG.log(System.Logger.Level.WARNING, "crash gate: halting the server");
            Runtime.getRuntime().halt(77);
        }
        while (true) {
            try {
                Thread.sleep(60_000);
            } catch (InterruptedException e) {
                // Keep the transaction here until the server dies.
                LOG.log(System.Logger.Level.DEBUG, "crash gate: interrupted, still waiting");
            }
        }
    }

    @Override
    public int prepare(Xid xid) throws XAException {
        if (phase == Phase.PREPARE) {
            arrive("prepare", xid);
        }
        return XA_OK;
    }

    @Override
    public void commit(Xid xid, boolean onePhase) throws XAException {
        if (phase == Phase.COMMIT) {
            arrive("commit", xid);
        }
    }

    @Override
    public void start(Xid xid, int flags) {
        // Nothing to associate.
    }

    @Override
    public void end(Xid xid, int flags) {
        // Nothing to dissociate.
    }

    @Override
    public void rollback(Xid xid) {
        // Nothing to undo.
    }

    @Override
    public void forget(Xid xid) {
        // Nothing remembered.
    }

    @Override
    public Xid[] recover(int flag) {
        return new Xid[0];
    }

    @Override
    public boolean isSameRM(XAResource other) {
        return other == this;
    }

    @Override
    public int getTransactionTimeout() {
        return 0;
    }

    @Override
    public boolean setTransactionTimeout(int seconds) {
        return false;
    }
}
