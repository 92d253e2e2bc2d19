package org.leasehold.remote;

import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Rendezvous (highest-random-weight) hashing of lease names onto servers: each name goes to the server with the
 * highest {@code hash(server, name)}. It is stable across JVMs and versions (FNV-1a over UTF-8, finished with the
 * SplitMix64 mixer), needs no ring or virtual nodes to spread evenly, and when a server is added or removed only the
 * names that move to or from it change place, which keeps migrations small.
 */
public final class Rendezvous {
    private Rendezvous() {
    }

    /** The index in {@code servers} (stable identities such as {@code host:port}) that {@code name} goes to. */
    public static int pick(List<String> servers, String name) {
        if (servers.size() == 1) {
            return 0;
        }
        long nameHash = fnv(name, 0xcbf29ce484222325L);
        int best = 0;
        long bestScore = Long.MIN_VALUE;
        for (int i = 0; i < servers.size(); i++) {
            long score = mix(fnv(servers.get(i), nameHash));
            if (score > bestScore || (score == bestScore && servers.get(i).compareTo(servers.get(best)) < 0)) {
                bestScore = score;
                best = i;
            }
        }
        return best;
    }

    private static long fnv(String s, long seed) {
        long h = seed;
        for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
            h ^= b & 0xff;
            h *= 0x100000001b3L;
        }
        return h;
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }
}
