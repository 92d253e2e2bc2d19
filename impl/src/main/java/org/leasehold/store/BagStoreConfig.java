package org.leasehold.store;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

import org.leasehold.config.Check;

/**
 * Settings of a {@link FileBagStore}. Build with {@link #builder(Path)}; {@link #validate()} checks every value and
 * says what is wrong and what would be accepted.
 *
 * <p>Bucket width, grace and maximum clock error are properties of a log: the first store to create a log records
 * them in the log's descriptor, and every store uses the recorded values for that log (a differing configuration is
 * logged and ignored), because writers and sealers that disagree on them could lose acknowledged messages.
 *
 * @param root              the store's root directory (must exist); one sub-directory per log
 * @param bucketWidth       the time range of one bucket; divides a day; default 1 s
 * @param grace             how long after its end a bucket may be sealed; default 2 s; must exceed maxClockError
 * @param maxClockError     bound on the clock difference between any two processes using the store; default 500 ms
 * @param flushPolicy       when data files are forced; default every batch (see {@link FlushPolicy} for the risks)
 * @param maxPayloadBytes   the largest payload of one message; default 1 MiB
 * @param maxFrameBytes     the largest frame (one append); default 16 MiB
 * @param maxBatchBytes     the most bytes one group-commit write carries; default 4 MiB
 * @param maxQueuedBytes    appends wait when this many bytes are queued for writing; default 64 MiB
 * @param maxLeaseDuration  the lease service's maximum lease duration, which bounds how far back a successor seals;
 *                          default 10 s (must be at least the service's value)
 * @param writerId          a fixed writer identity, or null for {@code <host>-<instance>}
 * @param host              the host part of the writer identity, or null for this machine's name
 * @param localLockDir      a machine-local directory (never on the shared store) for the writer-identity locks, or
 *                          null for {@code <java.io.tmpdir>/leasehold-writers}
 * @param metronome         run the background sealer for the logs this store writes to; default true
 * @param metronomeLookback how far back the metronome looks for unsealed buckets when it starts on a log; default 1 min
 * @param compactionHorizon how old a bucket's end must be before {@link FileBagStore#compact} merges it into a
 *                          segment; default 1 h; must exceed grace plus maxClockError
 * @param segmentSpan       the time range of one segment (segments start at multiples of it since the epoch, rounded
 *                          up to a multiple of the log's bucket width); divides a day; default 1 h
 * @param removeCompactedBuckets whether {@link FileBagStore#compact} removes the files of buckets a published,
 *                          verified segment holds, once {@code retentionDelay} has passed since the segment was first
 *                          seen published; default false (nothing is removed)
 * @param retentionDelay    how long after a segment was first seen published its buckets' files may be removed:
 *                          longer than any read may take; default 1 h; 1 s to 365 days
 * @param compactionInterval how often the store compacts, in the background, the logs it writes to (and retires their
 *                          buckets when {@code removeCompactedBuckets} is on), on its own worker thread driven by its
 *                          clock; {@link Duration#ZERO} (the default) for never; else 1 s to 1 day
 * @param signedTimeBound   how far a frame's timestamp may lie from the latest signed time its leases' witnesses
 *                          carry; an append beyond it is refused; default 1 s; 1 ms to 1 h
 */
public record BagStoreConfig(Path root, Duration bucketWidth, Duration grace, Duration maxClockError,
        FlushPolicy flushPolicy, int maxPayloadBytes, int maxFrameBytes, int maxBatchBytes, long maxQueuedBytes,
        Duration maxLeaseDuration, String writerId, String host, Path localLockDir, boolean metronome,
        Duration metronomeLookback, Duration compactionHorizon, Duration segmentSpan, boolean removeCompactedBuckets,
        Duration retentionDelay, Duration compactionInterval, Duration signedTimeBound) {

    /** The largest frame any configuration may allow (the format's length field is checked against it on read). */
    public static final int FRAME_LIMIT = 256 << 20;

    public BagStoreConfig {
        Objects.requireNonNull(root, "BagStoreConfig.root");
    }

    /** The defaults for a store rooted at {@code root}. */
    public static Builder builder(Path root) {
        return new Builder(root);
    }

    /** The defaults for a store rooted at {@code root}. */
    public static BagStoreConfig defaults(Path root) {
        return builder(root).build();
    }

    /** A builder holding this configuration's values. */
    public Builder toBuilder() {
        Builder b = new Builder(root);
        b.bucketWidth = bucketWidth;
        b.grace = grace;
        b.maxClockError = maxClockError;
        b.flushPolicy = flushPolicy;
        b.maxPayloadBytes = maxPayloadBytes;
        b.maxFrameBytes = maxFrameBytes;
        b.maxBatchBytes = maxBatchBytes;
        b.maxQueuedBytes = maxQueuedBytes;
        b.maxLeaseDuration = maxLeaseDuration;
        b.writerId = writerId;
        b.host = host;
        b.localLockDir = localLockDir;
        b.metronome = metronome;
        b.metronomeLookback = metronomeLookback;
        b.compactionHorizon = compactionHorizon;
        b.segmentSpan = segmentSpan;
        b.removeCompactedBuckets = removeCompactedBuckets;
        b.retentionDelay = retentionDelay;
        b.compactionInterval = compactionInterval;
        b.signedTimeBound = signedTimeBound;
        return b;
    }

    /** Checks every value; returns this. */
    public BagStoreConfig validate() {
        Check.positive("bucketWidth", bucketWidth);
        long w = bucketWidth.toNanos();
        if (w % 1_000L != 0) {
            throw Check.invalid("bucketWidth", bucketWidth, "use whole microseconds");
        }
        if (bucketWidth.compareTo(Duration.ofMillis(1)) < 0 || bucketWidth.compareTo(Duration.ofDays(1)) > 0
                || Duration.ofDays(1).toNanos() % w != 0) {
            throw Check.invalid("bucketWidth", bucketWidth,
                    "use a width from 1 ms to 1 day that divides a day evenly (for example 100 ms, 1 s or 1 min)");
        }
        Check.notNegative("maxClockError", maxClockError);
        Check.positive("grace", grace);
        if (grace.compareTo(maxClockError) <= 0) {
            throw new IllegalArgumentException("grace (" + grace + ") must be longer than maxClockError ("
                    + maxClockError + "): a write is on time only if it lands before end + grace - maxClockError");
        }
        Objects.requireNonNull(flushPolicy, "flushPolicy is null; use FlushPolicy.everyBatch()");
        Check.atLeast("maxPayloadBytes", maxPayloadBytes, 1, "");
        Check.within("maxFrameBytes", maxFrameBytes, 1024, FRAME_LIMIT, "use 1 KiB to " + (FRAME_LIMIT >> 20) + " MiB");
        if (maxPayloadBytes > maxFrameBytes - 1024) {
            throw new IllegalArgumentException("maxPayloadBytes (" + maxPayloadBytes + ") must leave room for a frame "
                    + "header in maxFrameBytes (" + maxFrameBytes + "): raise maxFrameBytes or lower maxPayloadBytes");
        }
        Check.atLeast("maxBatchBytes", maxBatchBytes, 1, "");
        if (maxQueuedBytes < maxFrameBytes) {
            throw new IllegalArgumentException("maxQueuedBytes (" + maxQueuedBytes + ") must be at least maxFrameBytes ("
                    + maxFrameBytes + "), or a large frame could never be queued");
        }
        Check.positive("maxLeaseDuration", maxLeaseDuration);
        Check.positive("metronomeLookback", metronomeLookback);
        Check.positive("compactionHorizon", compactionHorizon);
        if (compactionHorizon.compareTo(grace.plus(maxClockError)) <= 0) {
            throw Check.invalid("compactionHorizon", compactionHorizon, "use more than grace plus maxClockError ("
                    + grace.plus(maxClockError) + "): a bucket younger than that may still be written to or sealed");
        }
        Check.positive("segmentSpan", segmentSpan);
        if (segmentSpan.toNanos() % 1_000L != 0 || Duration.ofDays(1).toNanos() % segmentSpan.toNanos() != 0) {
            throw Check.invalid("segmentSpan", segmentSpan,
                    "use whole microseconds that divide a day evenly (for example 10 min, 1 h or 1 day)");
        }
        Check.positive("retentionDelay", retentionDelay);
        if (retentionDelay.compareTo(Duration.ofSeconds(1)) < 0 || retentionDelay.compareTo(Duration.ofDays(365)) > 0) {
            throw Check.invalid("retentionDelay", retentionDelay, "use 1 s to 365 days, longer than any read may take "
                    + "(a read that listed the segments before one was published may open its buckets until then)");
        }
        Check.notNegative("compactionInterval", compactionInterval);
        if (!compactionInterval.isZero() && (compactionInterval.compareTo(Duration.ofSeconds(1)) < 0
                || compactionInterval.compareTo(Duration.ofDays(1)) > 0)) {
            throw Check.invalid("compactionInterval", compactionInterval, "use 0 (no background compaction) or 1 s to "
                    + "1 day");
        }
        Check.positiveAtMost("signedTimeBound", signedTimeBound, Duration.ofHours(1), "use 1 ms to 1 h (default 1 s): "
                + "how far a message's timestamp may lie from the signed time its witnesses carry");
        if (signedTimeBound.compareTo(Duration.ofMillis(1)) < 0) {
            throw Check.invalid("signedTimeBound", signedTimeBound, "use 1 ms to 1 h (default 1 s)");
        }
        if (writerId != null) {
            String problem = Names.writerIdProblem(writerId);
            if (problem != null) {
                throw new IllegalArgumentException("writerId '" + writerId + "' " + problem);
            }
        }
        if (host != null && Names.sanitizeHost(host).isEmpty()) {
            throw new IllegalArgumentException("host '" + host + "' has no letter or digit to build a writer id from");
        }
        return this;
    }

    /** Builds a {@link BagStoreConfig}; starts from the defaults. */
    public static final class Builder {
        private final Path root;
        private Duration bucketWidth = Duration.ofSeconds(1);
        private Duration grace = Duration.ofSeconds(2);
        private Duration maxClockError = Duration.ofMillis(500);
        private FlushPolicy flushPolicy = FlushPolicy.everyBatch();
        private int maxPayloadBytes = 1 << 20;
        private int maxFrameBytes = 16 << 20;
        private int maxBatchBytes = 4 << 20;
        private long maxQueuedBytes = 64L << 20;
        private Duration maxLeaseDuration = Duration.ofSeconds(10);
        private String writerId;
        private String host;
        private Path localLockDir;
        private boolean metronome = true;
        private Duration metronomeLookback = Duration.ofMinutes(1);
        private Duration compactionHorizon = Duration.ofHours(1);
        private Duration segmentSpan = Duration.ofHours(1);
        private boolean removeCompactedBuckets;
        private Duration retentionDelay = Duration.ofHours(1);
        private Duration compactionInterval = Duration.ZERO;
        private Duration signedTimeBound = Duration.ofSeconds(1);

        private Builder(Path root) {
            this.root = root;
        }

        public Builder bucketWidth(Duration v) {
            bucketWidth = v;
            return this;
        }

        public Builder grace(Duration v) {
            grace = v;
            return this;
        }

        public Builder maxClockError(Duration v) {
            maxClockError = v;
            return this;
        }

        public Builder flushPolicy(FlushPolicy v) {
            flushPolicy = v;
            return this;
        }

        public Builder maxPayloadBytes(int v) {
            maxPayloadBytes = v;
            return this;
        }

        public Builder maxFrameBytes(int v) {
            maxFrameBytes = v;
            return this;
        }

        public Builder maxBatchBytes(int v) {
            maxBatchBytes = v;
            return this;
        }

        public Builder maxQueuedBytes(long v) {
            maxQueuedBytes = v;
            return this;
        }

        public Builder maxLeaseDuration(Duration v) {
            maxLeaseDuration = v;
            return this;
        }

        public Builder writerId(String v) {
            writerId = v;
            return this;
        }

        public Builder host(String v) {
            host = v;
            return this;
        }

        public Builder localLockDir(Path v) {
            localLockDir = v;
            return this;
        }

        public Builder metronome(boolean v) {
            metronome = v;
            return this;
        }

        public Builder metronomeLookback(Duration v) {
            metronomeLookback = v;
            return this;
        }

        public Builder compactionHorizon(Duration v) {
            compactionHorizon = v;
            return this;
        }

        public Builder segmentSpan(Duration v) {
            segmentSpan = v;
            return this;
        }

        public Builder removeCompactedBuckets(boolean v) {
            removeCompactedBuckets = v;
            return this;
        }

        public Builder retentionDelay(Duration v) {
            retentionDelay = v;
            return this;
        }

        public Builder compactionInterval(Duration v) {
            compactionInterval = v;
            return this;
        }

        public Builder signedTimeBound(Duration v) {
            signedTimeBound = v;
            return this;
        }

        /** The configuration, validated. */
        public BagStoreConfig build() {
            return new BagStoreConfig(root, bucketWidth, grace, maxClockError, flushPolicy, maxPayloadBytes,
                    maxFrameBytes, maxBatchBytes, maxQueuedBytes, maxLeaseDuration, writerId, host, localLockDir,
                    metronome, metronomeLookback, compactionHorizon, segmentSpan, removeCompactedBuckets,
                    retentionDelay, compactionInterval, signedTimeBound).validate();
        }
    }
}
