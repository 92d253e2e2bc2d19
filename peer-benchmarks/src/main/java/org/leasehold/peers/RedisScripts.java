package org.leasehold.peers;

import java.security.SecureRandom;
import java.util.concurrent.atomic.AtomicLong;

/** The Redis lock recipe shared by both Redis clients: {@code SET key token NX PX} and a compare-and-delete script. */
final class RedisScripts {
    /** Deletes the key only if it still holds the caller's token (the lock may have expired and been retaken). */
    static final String COMPARE_AND_DELETE =
            "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

    private final String prefix = Long.toHexString(new SecureRandom().nextLong()) + ":";
    private final AtomicLong counter = new AtomicLong();

    /** A token unique to one acquisition. */
    String token() {
        return prefix + counter.incrementAndGet();
    }

    /** The Redis key of a lock name. */
    static String key(String name) {
        return "lock:" + name;
    }

    /** A held Redis lock. */
    record Held(String key, String token) {
    }
}
