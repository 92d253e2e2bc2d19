package org.leasehold.audit;

import java.io.IOException;
import java.util.function.Consumer;

/**
 * Starts and rotates a lease service's signer so that every key is published before it signs: the public key is
 * linked into the bag store's {@code .leasehold/keys/} first, then the signer uses it. A rotated-out key stays
 * published and valid, so the witnesses it signed keep verifying; revoking it is a separate, explicit step.
 */
public final class ServiceKeys {
    /** Default linger of a batch: how long it waits for more statements after its first, in microseconds. */
    public static final long DEFAULT_LINGER_MICROS = 200;
    /** Default most statements in a batch. */
    public static final int DEFAULT_MAX_BATCH = 512;

    private final KeyFiles keyFiles;
    private final PublishedKeys published;
    private final String serviceId;
    private final Consumer<PublishedKey> served;

    /**
     * @param keyFiles  where the service keeps its private keys (null when it uses a configured PEM key only; it
     *                  cannot rotate then)
     * @param published where its public keys are published
     * @param serviceId the service the keys sign for
     */
    public ServiceKeys(KeyFiles keyFiles, PublishedKeys published, String serviceId) {
        this(keyFiles, published, serviceId, null);
    }

    /**
     * @param keyFiles  where the service keeps its private keys (null when it uses a configured PEM key only)
     * @param published where its public keys are published, or null if they are not published into a store
     * @param serviceId the service the keys sign for
     * @param served    told of each key after it is published and before the signer uses it (a lease server adds
     *                  it to the keys it serves), or null
     */
    public ServiceKeys(KeyFiles keyFiles, PublishedKeys published, String serviceId, Consumer<PublishedKey> served) {
        this.keyFiles = keyFiles;
        this.published = published;
        this.serviceId = serviceId;
        this.served = served;
    }

    private void publish(PublishedKey key) throws IOException, AuditFormatException {
        if (published != null) {
            published.publish(key);
        }
        if (served != null) {
            served.accept(key);
        }
    }

    /**
     * Publishes {@code key} valid from {@code nowMicros} (unless it is published already) and starts a signer with it.
     *
     * @param key          the key: a configured PEM key, or {@code keyFiles.current()}
     * @param radiusMicros the clock error bound the signed times state
     */
    public AuditSigner start(SigningKey key, long radiusMicros, long nowMicros) throws IOException,
            AuditFormatException {
        return start(key, radiusMicros, nowMicros, DEFAULT_LINGER_MICROS);
    }

    /**
     * As {@link #start(SigningKey, long, long)}, with batches that wait {@code lingerMicros} for more statements after
     * their first (0 to 1 000 000), unless somebody waits for a proof.
     */
    public AuditSigner start(SigningKey key, long radiusMicros, long nowMicros, long lingerMicros) throws IOException,
            AuditFormatException {
        publish(new PublishedKey(key.publicKey(), serviceId, nowMicros, Long.MAX_VALUE, Long.MAX_VALUE));
        return new AuditSigner(key, serviceId, radiusMicros, lingerMicros, DEFAULT_MAX_BATCH);
    }

    /**
     * Rotates {@code signer} to a new key: creates it in the key files, publishes it valid from {@code nowMicros},
     * and only then signs with it. Returns the new key's id.
     *
     * @throws IllegalStateException if the service has no key files (a configured PEM key)
     */
    public KeyId rotate(AuditSigner signer, long nowMicros) throws IOException, AuditFormatException {
        if (keyFiles == null) {
            throw new IllegalStateException("the lease service " + serviceId + " signs with a configured PEM key: "
                    + "rotate it by configuring a new key file and restarting");
        }
        SigningKey next = keyFiles.next();
        publish(new PublishedKey(next.publicKey(), serviceId, nowMicros, Long.MAX_VALUE, Long.MAX_VALUE));
        signer.rotate(next);
        return next.id();
    }

    /**
     * Rotates {@code signer} to the current key of the key files if another process linked a newer one (an operator's
     * {@code leasehold keys rotate}): publishes it valid from {@code nowMicros} (nothing happens if it is published
     * already) and only then signs with it. Returns the new key's id, or null if the signer's key is the current one
     * (or the service has no key files).
     */
    public KeyId adoptLatest(AuditSigner signer, long nowMicros) throws IOException, AuditFormatException {
        if (keyFiles == null) {
            return null;
        }
        SigningKey current = keyFiles.current();
        if (current.id().equals(signer.keyId())) {
            return null;
        }
        publish(new PublishedKey(current.publicKey(), serviceId, nowMicros, Long.MAX_VALUE, Long.MAX_VALUE));
        signer.rotate(current);
        return current.id();
    }

    /** Revokes {@code id}: its statements signed at or after {@code atMicros} are flagged by verifiers. */
    public void revoke(KeyId id, long atMicros, String reason) throws IOException {
        if (published == null) {
            throw new IllegalStateException("the lease service " + serviceId + " publishes its keys into no store: "
                    + "there is no published key to revoke");
        }
        published.revoke(id, atMicros, reason);
    }
}
