package org.leasehold.audit;

import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** The public keys a verifier accepts, by id. Immutable. */
public final class KeySet {
    private final Map<KeyId, PublishedKey> keys;

    private KeySet(Map<KeyId, PublishedKey> keys) {
        this.keys = Map.copyOf(keys);
    }

    /** The set of {@code keys}; a key listed twice keeps the widest validity and the earliest revocation. */
    public static KeySet of(Collection<PublishedKey> keys) {
        Map<KeyId, PublishedKey> m = new HashMap<>();
        for (PublishedKey k : keys) {
            m.merge(k.id(), k, (a, b) -> new PublishedKey(a.key(), a.serviceId(), Math.min(a.validFrom(),
                    b.validFrom()), Math.max(a.validUntil(), b.validUntil()), Math.min(a.revokedAt(), b.revokedAt())));
        }
        return new KeySet(m);
    }

    /** A set of {@code keys}. */
    public static KeySet of(PublishedKey... keys) {
        return of(List.of(keys));
    }

    /** The key with id {@code id}, or null. */
    public PublishedKey get(KeyId id) {
        return keys.get(id);
    }

    public Collection<PublishedKey> keys() {
        return keys.values();
    }

    public boolean isEmpty() {
        return keys.isEmpty();
    }
}
