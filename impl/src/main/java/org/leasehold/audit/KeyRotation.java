package org.leasehold.audit;

import java.io.IOException;

import org.leasehold.time.TimeSource;

/**
 * Key rotation of a running lease service without downtime: every {@link #CHECK_MICROS} by the service's clock, looks
 * for a newer key file than the one the service signs with (linked into its key directory by an operator's
 * {@code leasehold keys rotate} or {@code leasehold keys rotate-server}), publishes its public key unless it is
 * published already, and only then signs with it ({@link ServiceKeys#adoptLatest}). Leases and commits go on
 * meanwhile; the old key stays published and valid. Used by the adapter's embedded engine and by the lease server when
 * their keys are generated ones (a configured PEM key is rotated by configuring another and restarting).
 */
public final class KeyRotation implements AutoCloseable {
    /** How often the key directory is looked at: one listing and one small read. */
    public static final long CHECK_MICROS = 10_000_000;

    /** What a look found; called under the rotation's lock, one call at a time. */
    public interface Events {
        /** The service now signs with {@code to}, published before its first signature. */
        void rotated(KeyId from, KeyId to);

        /** A look failed with {@code problem}; called once per distinct problem until a look succeeds. */
        void failed(KeyId current, String problem);
    }

    private final ServiceKeys keys;
    private final AuditSigner signer;
    private final TimeSource time;
    private final Events events;
    private final Object lock = new Object();
    private TimeSource.Timer timer;
    private boolean closed;
    private String lastFailure;

    /** Starts looking: the first look is {@link #CHECK_MICROS} from now by {@code time}. */
    public KeyRotation(ServiceKeys keys, AuditSigner signer, TimeSource time, Events events) {
        this.keys = keys;
        this.signer = signer;
        this.time = time;
        this.events = events;
        synchronized (lock) {
            arm();
        }
    }

    private void arm() {
        timer = time.scheduleAfter(CHECK_MICROS, this::check);
    }

    /** One look at the key directory, then the next timer (none after {@link #close}). */
    public void check() {
        synchronized (lock) {
            if (closed) {
                return;
            }
            KeyId from = signer.keyId();
            try {
                KeyId to = keys.adoptLatest(signer, time.nowMicros());
                if (to != null) {
                    events.rotated(from, to);
                }
                lastFailure = null;
            } catch (IOException | AuditFormatException | RuntimeException e) {
                String problem = e.toString();
                if (!problem.equals(lastFailure)) {
                    events.failed(from, problem);
                }
                lastFailure = problem;
            }
            arm();
        }
    }

    @Override
    public void close() {
        synchronized (lock) {
            closed = true;
            if (timer != null) {
                timer.cancel();
            }
        }
    }
}
