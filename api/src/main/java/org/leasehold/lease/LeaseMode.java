package org.leasehold.lease;

/**
 * How a lease shares its name with other holders.
 *
 * <ul>
 *   <li>{@link #EXCLUSIVE}: no other holder of any mode.
 *   <li>{@link #SHARED}: any number of shared holders together, never with an exclusive or semaphore holder
 *       (a readers-writer lock).
 *   <li>{@link #semaphore(int) semaphore(n)}: at most {@code n} holders at once, each holding one permit; every
 *       requester of the name must agree on {@code n}.
 * </ul>
 *
 * @param type    the sharing rule
 * @param permits the number of permits of a semaphore; 1 for exclusive, 0 (unbounded) for shared
 */
public record LeaseMode(Type type, int permits) {

    /** The sharing rule of a mode. */
    public enum Type { EXCLUSIVE, SHARED, SEMAPHORE }

    public static final LeaseMode EXCLUSIVE = new LeaseMode(Type.EXCLUSIVE, 1);
    public static final LeaseMode SHARED = new LeaseMode(Type.SHARED, 0);

    public LeaseMode {
        if (type == null) {
            throw new NullPointerException("LeaseMode.type");
        }
    }

    /**
     * A counting semaphore of {@code permits} permits. Values below 1 are refused by the service with
     * {@link InvalidLeaseRequestException.Reason#INVALID_PERMITS}.
     */
    public static LeaseMode semaphore(int permits) {
        return new LeaseMode(Type.SEMAPHORE, permits);
    }

    /** True if a holder in this mode may hold the name together with a holder in {@code other}. */
    public boolean compatibleWith(LeaseMode other) {
        return type == other.type && type != Type.EXCLUSIVE;
    }

    @Override
    public String toString() {
        return type == Type.SEMAPHORE ? "semaphore(" + permits + ")" : type.name().toLowerCase(java.util.Locale.ROOT);
    }
}
