package org.leasehold.adapter;

import java.io.IOException;

import org.leasehold.audit.AuditFormatException;
import org.leasehold.audit.AuditSigner;
import org.leasehold.audit.KeyId;
import org.leasehold.audit.ServiceKeys;
import org.leasehold.time.TimeSource;

/**
 * Key rotation of the embedded engine without downtime: every {@link #CHECK_MICROS} by the runtime's clock, looks for
 * a newer key file than the one the engine signs with under {@code <root>/.leasehold/signing/<log>/<writer>/} (linked
 * by an operator's {@code leasehold keys rotate}), publishes its public key unless it is published already, and only
 * then signs with it ({@link ServiceKeys#adoptLatest}). Leases and commits go on meanwhile; the old key stays published
 * and valid. Not used with a {@code SigningKeyFile} (rotate that by configuring a new file and restarting).
 */
final class SigningKeyRotation implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(SigningKeyRotation.class.getName());
    /** How often the key directory is looked at: one listing and one small read. */
    static final long CHECK_MICROS = 10_000_000;

    private final ServiceKeys keys;
    private final AuditSigner signer;
    private final TimeSource time;
    private final String log;
    private final Object lock = new Object();
    private TimeSource.Timer timer;
    private boolean closed;
    private String lastFailure;

    SigningKeyRotation(ServiceKeys keys, AuditSigner signer, TimeSource time, String log) {
        this.keys = keys;
        this.signer = signer;
        this.time = time;
        this.log = log;
        synchronized (lock) {
            arm();
        }
    }

    private void arm() {
        timer = time.schedule(time.nowMicros() + CHECK_MICROS, this::check);
    }

    /** One look at the key directory, then the next timer. */
    void check() {
        synchronized (lock) {
            if (closed) {
                return;
            }
            KeyId from = signer.keyId();
            try {
                KeyId to = keys.adoptLatest(signer, time.nowMicros());
                if (to != null) {
                    LOG.log(System.Logger.Level.INFO, "LEASEHOLD-8202 the embedded engine of log {0} rotated its "
                            + "signing key from {1} to {2}, published before its first signature; the old key stays "
                            + "valid until revoked", log, from, to);
                }
                lastFailure = null;
            } catch (IOException | AuditFormatException | RuntimeException e) {
                String problem = e.toString();
                if (!problem.equals(lastFailure)) {
                    LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-8203 the embedded engine of log {0} could not "
                            + "look for a rotated signing key: {1}; it signs on with key {2} and looks again in {3} s",
                            log, problem, from, CHECK_MICROS / 1_000_000);
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
