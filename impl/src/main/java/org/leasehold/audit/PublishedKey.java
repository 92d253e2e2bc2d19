package org.leasehold.audit;

import java.util.Objects;

/**
 * A lease service's public key as published, with the period in which it signs: statements whose signed time lies
 * in {@code [validFrom, validUntil)} and before {@code revokedAt} are accepted under it. Instants are microseconds
 * since the epoch; {@link Long#MAX_VALUE} means "open".
 *
 * @param key        the public key
 * @param serviceId  the lease service that signs with it
 * @param validFrom  the first instant it signs
 * @param validUntil the first instant it no longer signs
 * @param revokedAt  the instant from which its statements are refused, or {@link Long#MAX_VALUE} if not revoked
 */
public record PublishedKey(VerifyingKey key, String serviceId, long validFrom, long validUntil, long revokedAt) {

    public PublishedKey {
        Objects.requireNonNull(key, "PublishedKey.key");
        Objects.requireNonNull(serviceId, "PublishedKey.serviceId");
        if (validUntil <= validFrom) {
            throw new IllegalArgumentException("a key's validity ends after it starts: [" + validFrom + ", "
                    + validUntil + ")");
        }
    }

    public KeyId id() {
        return key.id();
    }

    /** This key revoked from {@code at} (the earlier revocation wins). */
    public PublishedKey revokedFrom(long at) {
        return new PublishedKey(key, serviceId, validFrom, validUntil, Math.min(revokedAt, at));
    }
}
