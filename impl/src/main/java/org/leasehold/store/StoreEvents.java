package org.leasehold.store;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * The bag store's Java Flight Recorder events: one per bucket seal and per read. They cost nothing while JFR is off
 * or the event is disabled: fields are filled only when {@code shouldCommit()} says the event will be recorded.
 * docs/OBSERVABILITY.md lists them with their fields.
 */
final class StoreEvents {
    private StoreEvents() {
    }

    /** One run of the sealing protocol on one bucket. */
    @Name("org.leasehold.Seal")
    @Label("Bucket Seal")
    @Category("Leasehold")
    @StackTrace(false)
    @Description("The five steps of sealing one bucket, and who won")
    static final class Seal extends Event {
        @Label("Log")
        String log;
        @Label("Bucket")
        @Description("The bucket's path inside the log")
        String bucket;
        @Label("Bucket Start")
        @Description("The first instant of the bucket (ISO-8601)")
        String bucketStart;
        @Label("Outcome")
        @Description("sealed (this call's lock file won), helped (another sealer's won the race), already sealed, "
                + "missing (no such bucket, left alone), or failed")
        String outcome;
        @Label("Data Files")
        int files;
        @Label("Bytes")
        @Description("The bytes of data the lock file lists")
        long bytes;
    }

    /** One read of a log, from its opening until the stream is closed. */
    @Name("org.leasehold.Read")
    @Label("Log Read")
    @Category("Leasehold")
    @StackTrace(false)
    @Description("A streaming read of one log: its range, the messages it returned and the buckets it walked")
    static final class Read extends Event {
        @Label("Log")
        String log;
        @Label("From")
        @Description("The first instant asked for (ISO-8601), empty for the log's beginning")
        String from;
        @Label("To")
        @Description("The instant the read stops before (ISO-8601), empty for the log's end")
        String to;
        @Label("Unsealed")
        @Description("Whether unsealed buckets were read too")
        boolean includeUnsealed;
        @Label("Messages")
        @Description("Messages returned before the stream was closed")
        long messages;
        @Label("Buckets")
        @Description("Buckets opened and merged")
        int buckets;
        @Label("Problems")
        @Description("Torn tails and skipped records reported")
        int problems;
    }
}
