package org.leasehold.engine;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

import org.leasehold.lease.CorrelationId;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseMode;

/**
 * One granted lease, shared by the states of all its names. Its kind and deadline change only under the locks of
 * all its names' shards (upgrade, renew); its status leaves {@link #ACTIVE} once, under the lock of at least one of
 * them (release holds all; a breaker or a re-take holds one), and the other names notice it when they next look.
 */
final class Holding {
    private static final VarHandle STATUS;

    static {
        try {
            STATUS = MethodHandles.lookup().findVarHandle(Holding.class, "status", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    static final int ACTIVE = 0;
    static final int RELEASED = 1;
    static final int BROKEN = 2;
    static final int RETAKEN = 3;

    final HolderId holder;
    final LeaseMode mode;
    /** Wound-wait age: the requester's start, in micros. */
    final long age;
    final long grantedAt;
    /** The highest floor over all names: a watermark must not be below it. */
    final long floor;
    final String[] names;
    final long[] generations;
    final CorrelationId[] ids;
    @SuppressWarnings("unused") // accessed through STATUS
    private volatile int status;

    volatile LeaseKind kind;
    volatile long deadline;
    /** Set before {@link #status} leaves ACTIVE. */
    volatile long endedAt;
    /** For a re-taken full lease: the watermark the service assumes for it. */
    volatile long impliedWatermark = Long.MIN_VALUE;
    /** While the service keeps this lease alive for a holder that may be unable to (micros), else MIN_VALUE. */
    volatile long heldUntil = Long.MIN_VALUE;
    /** The lease value last handed out, returned again by an idempotent upgrade. */
    volatile Lease lease;
    /** The authenticated principal it was granted to, named in its witnesses, or null where none is known. */
    final String principal;

    Holding(HolderId holder, LeaseMode mode, LeaseKind kind, long age, long grantedAt, long deadline, long floor,
            String[] names, String principal) {
        this.holder = holder;
        this.principal = principal;
        this.mode = mode;
        this.kind = kind;
        this.age = age;
        this.grantedAt = grantedAt;
        this.deadline = deadline;
        this.floor = floor;
        this.names = names;
        this.generations = new long[names.length];
        this.ids = new CorrelationId[names.length];
    }

    int indexOf(String name) {
        if (names.length == 1) {
            return 0;
        }
        for (int i = 0; i < names.length; i++) {
            if (names[i].equals(name)) {
                return i;
            }
        }
        throw new IllegalStateException("holding does not cover " + name);
    }

    /** Ends the holding with {@code how} at {@code at}, unless something ended it first. */
    boolean end(int how, long at) {
        if (status() != ACTIVE) {
            return false;
        }
        endedAt = at;
        return STATUS.compareAndSet(this, ACTIVE, how);
    }

    int status() {
        return (int) STATUS.getVolatile(this);
    }

    boolean isLive(long now) {
        return status() == ACTIVE && deadline > now;
    }

    /** True if this holding is younger than a requester of age {@code otherAge} and identity {@code other}. */
    boolean youngerThan(long otherAge, HolderId other) {
        if (age != otherAge) {
            return age > otherAge;
        }
        return holder.toString().compareTo(other.toString()) > 0;
    }
}
