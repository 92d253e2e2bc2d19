package org.leasehold.engine;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;

import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.InvalidLeaseRequestException.Reason;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseGrant;

/**
 * The lock stripes (shards) the names are spread over by hash, each holding the states of its names, and the rule
 * that an operation locks the shards of its names in ascending order.
 *
 * <p>A shard's lock guards everything in it: its map of names, every field of those {@link NameState}s (holders,
 * waiters, floors, history, wake timer), its correlation-id counter and the bounds it keeps for names it forgot.
 */
final class Stripes {
    private final Shard[] shards;
    private final int shardMask;
    private final long generationBase;
    private final long initialFloor;
    private final GenerationOffsets offsets;

    /**
     * {@code count} stripes (a power of two); a name seen for the first time starts at generation
     * {@code max(generationBase, forgotten) + offset(name)} and with the floor {@code max(initialFloor, forgotten)}.
     */
    Stripes(int count, long generationBase, long initialFloor, GenerationOffsets offsets) {
        this.shards = new Shard[count];
        for (int i = 0; i < shards.length; i++) {
            shards[i] = new Shard(i);
        }
        this.shardMask = shards.length - 1;
        this.generationBase = generationBase;
        this.initialFloor = initialFloor;
        this.offsets = offsets;
    }

    int count() {
        return shards.length;
    }

    Shard[] all() {
        return shards;
    }

    /** The state of {@code name}, made if the name is not remembered. Callers hold its shard's lock. */
    NameState stateOf(String name, long now) {
        Shard s = shardOf(name);
        NameState st = s.names.get(name);
        if (st == null) {
            long gen = Math.max(generationBase, s.forgottenGeneration) + offsets.offset(name);
            long floor = Math.max(initialFloor, s.forgottenFloor);
            st = new NameState(name, gen, floor, now);
            s.names.put(name, st);
        }
        return st;
    }

    /** The state of {@code name} if it is remembered, else null. Callers hold its shard's lock. */
    NameState existing(String name) {
        return shardOf(name).names.get(name);
    }

    /** The states of a request's names, made where missing. Callers hold the request's shards' locks. */
    NameState[] states(Waiter w, long now) {
        NameState[] states = new NameState[w.names.length];
        for (int i = 0; i < states.length; i++) {
            states[i] = stateOf(w.names[i], now);
        }
        return states;
    }

    /**
     * The shard of a name: the high bits of the name's hash times the golden ratio. Not the low bits HashMap indexes
     * by: with those, every name of a shard would share its bucket bits in the shard's map, filling 1/shards of the
     * buckets with long (treeified) chains.
     */
    static int index(String name, int shardMask) {
        return Integer.rotateLeft(name.hashCode() * 0x9E3779B9, 16) & shardMask;
    }

    Shard shardOf(String name) {
        return shards[index(name, shardMask)];
    }

    /** The distinct shards of {@code names}, ascending: the order they are locked in. */
    int[] of(String[] names) {
        if (names.length == 1) {
            return new int[] {index(names[0], shardMask)};
        }
        int[] idx = new int[names.length];
        for (int i = 0; i < names.length; i++) {
            idx[i] = index(names[i], shardMask);
        }
        Arrays.sort(idx);
        int n = 0;
        for (int i = 0; i < idx.length; i++) {
            if (i == 0 || idx[i] != idx[i - 1]) {
                idx[n++] = idx[i];
            }
        }
        return n == idx.length ? idx : Arrays.copyOf(idx, n);
    }

    /** The distinct shards of the names of {@code lease}, ascending; refuses a value that names no lease. */
    int[] of(Lease lease) throws InvalidLeaseRequestException {
        if (lease == null) {
            throw new InvalidLeaseRequestException(Reason.NULL_ARGUMENT, "the lease is null");
        }
        List<LeaseGrant> grants = lease.grants();
        if (grants.isEmpty()) {
            throw new InvalidLeaseRequestException(Reason.NO_NAMES, "the lease value names no lease");
        }
        if (grants.size() == 1) {
            String only = grants.get(0).name();
            if (only == null) {
                throw new InvalidLeaseRequestException(Reason.EMPTY_NAME, "the lease value has a null name");
            }
            return new int[] {index(only, shardMask)};
        }
        String[] names = new String[grants.size()];
        for (int i = 0; i < names.length; i++) {
            names[i] = grants.get(i).name();
            if (names[i] == null) {
                throw new InvalidLeaseRequestException(Reason.EMPTY_NAME, "the lease value has a null name");
            }
        }
        return of(names);
    }

    /** Locks the shards {@code idx} (ascending, as {@link #of} returns them). */
    void lockAll(int[] idx) {
        for (int i : idx) {
            shards[i].lock.lock();
        }
    }

    void unlockAll(int[] idx) {
        for (int i = idx.length - 1; i >= 0; i--) {
            shards[idx[i]].lock.unlock();
        }
    }

    /** One lock stripe: its names and the bounds it keeps for names it forgot. */
    static final class Shard {
        final ReentrantLock lock = new ReentrantLock();
        final HashMap<String, NameState> names = new HashMap<>();
        final int index;
        long idCounter;
        long forgottenFloor = Long.MIN_VALUE;
        long forgottenGeneration;

        Shard(int index) {
            this.index = index;
        }
    }
}
