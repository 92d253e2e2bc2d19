package org.leasehold.lease;

import java.time.Instant;

/**
 * What a grant knows of the name's previous holder, as a witness records it.
 *
 * @param correlationId the previous grant's id, or {@link CorrelationId#NONE} if {@link Ending#UNKNOWN}
 * @param ending        how it ended
 * @param endedAt       when it ended in service time (for {@link Ending#EXPIRED}: its deadline; for
 *                      {@link Ending#UNKNOWN}: the bound the floor comes from)
 * @param watermark     the watermark it published on release, or null if it published none
 * @param metadata      where it said it stored its updates, or null
 */
public record Predecessor(CorrelationId correlationId, Ending ending, Instant endedAt, Instant watermark, String metadata) {

    public Predecessor {
        if (correlationId == null || ending == null) {
            throw new NullPointerException("Predecessor.correlationId and Predecessor.ending are required");
        }
    }
}
