package org.leasehold.lease;

/** How a holder's lease on a name ended, as the next holder learns it. */
public enum Ending {
    /**
     * The service knows no previous holder: the name is new to it, or it restarted (or forgot the idle name) since.
     * The floor is then a bound the service kept that covers any holder it may have had.
     */
    UNKNOWN,
    /** The holder released it, publishing a watermark. */
    RELINQUISHED,
    /**
     * The deadline passed before the holder released it. The next holder's floor is at least that deadline and
     * it may write only from {@code deadline + grace}, when everything the old holder may still land is sealed
     * or refused.
     */
    EXPIRED,
    /** A tentative lease broken by an older requester; it never wrote, so it moves neither floor nor watermark. */
    BROKEN,
    /** The same identity took the name again; its previous lease ended at that moment. */
    RETAKEN
}
