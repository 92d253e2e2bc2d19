package org.leasehold.lease;

import java.time.Instant;

/**
 * One entry of a name's recent history, kept by the service so that a new holder (or an operator) learns
 * where previous holders stored their updates. The service keeps a bounded number per name, dropping the oldest.
 *
 * @param correlationId the grant that recorded it
 * @param generation    that grant's generation
 * @param holder        who held it
 * @param ending        how that lease ended; {@code null} for an entry published on renewal while still held
 * @param at            when the entry was recorded, in service time
 * @param watermark     the published watermark, or null
 * @param metadata      the holder's hint ("where I stored my updates"), or null
 */
public record MetadataEntry(CorrelationId correlationId, long generation, HolderId holder, Ending ending, Instant at,
        Instant watermark, String metadata) {
}
