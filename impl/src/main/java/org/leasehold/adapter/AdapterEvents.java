package org.leasehold.adapter;

import javax.transaction.xa.XAException;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseServiceUnavailableException;

/**
 * The adapter's Java Flight Recorder events: one per lease acquisition and per transaction branch phase. They cost
 * nothing while JFR is off or the event is disabled: fields are filled only when {@code shouldCommit()} says the
 * event will be recorded. docs/OBSERVABILITY.md lists them with their fields.
 */
final class AdapterEvents {
    /** Lease names longer than this, joined, are cut and end with {@code ...}. */
    static final int MAX_NAMES_CHARS = 512;

    private AdapterEvents() {
    }

    /** The names joined with commas, at most {@link #MAX_NAMES_CHARS} characters. */
    static String names(java.util.List<String> names) {
        String joined = String.join(",", names);
        return joined.length() <= MAX_NAMES_CHARS ? joined : joined.substring(0, MAX_NAMES_CHARS - 3) + "...";
    }

    /** How an acquisition failed, in a word: busy, unavailable, invalid, interrupted, or the exception's class. */
    static String failure(Throwable e) {
        if (e instanceof LeaseBusyException) {
            return "busy";
        }
        if (e instanceof LeaseServiceUnavailableException) {
            return "unavailable";
        }
        if (e instanceof InvalidLeaseRequestException) {
            return "invalid";
        }
        if (Thread.currentThread().isInterrupted()) {
            return "interrupted";
        }
        return e.getClass().getSimpleName();
    }

    /** What an {@link XAException} thrown by a phase says, in words. */
    static String xaOutcome(XAException e) {
        switch (e.errorCode) {
            case XAException.XA_RBROLLBACK:
                return "rollback";
            case XAException.XA_HEURRB:
                return "heuristic rollback";
            case XAException.XA_HEURHAZ:
                return "heuristic hazard";
            case XAException.XA_HEURCOM:
                return "heuristic commit";
            case XAException.XAER_NOTA:
                return "unknown branch";
            case XAException.XAER_PROTO:
                return "protocol error";
            case XAException.XAER_RMERR:
                return "resource manager error";
            default:
                return "xa error " + e.errorCode;
        }
    }

    /** One acquisition of leases by a unit of work, from the call until the grant or the refusal. */
    @Name("org.leasehold.Acquire")
    @Label("Lease Acquire")
    @Category("Leasehold")
    @StackTrace(false)
    @Description("Leases asked for by a unit of work: how long it waited and how it ended")
    static final class Acquire extends Event {
        @Label("Log")
        String log;
        @Label("Names")
        @Description("The lease names asked for, joined with commas (at most 512 characters)")
        String names;
        @Label("Mode")
        String mode;
        @Label("Kind")
        @Description("TENTATIVE inside a JTA transaction, FULL otherwise")
        String kind;
        @Label("Waited (µs)")
        @Description("From the request to the grant or refusal, on the adapter's clock")
        long waitedMicros;
        @Label("Outcome")
        @Description("granted, held (the unit held every name already), busy, unavailable, invalid, interrupted, "
                + "or the exception's class")
        String outcome;
        @Label("Generation")
        @Description("The generation of the first name's grant; -1 when not granted")
        long generation;
        @Label("Holder")
        String holder;
    }

    /** One prepare of a transaction branch: the adapter's vote. */
    @Name("org.leasehold.Prepare")
    @Label("Branch Prepare")
    @Category("Leasehold")
    @StackTrace(false)
    @Description("Phase one of a transaction branch: upgrade the leases, record the branch in the journal, vote")
    static final class Prepare extends Event {
        @Label("Log")
        String log;
        @Label("Branch")
        String branch;
        @Label("Leases")
        int leaseCount;
        @Label("Messages")
        int messageCount;
        @Label("Vote")
        @Description("ok, read-only, rollback, or the XA error")
        String vote;
    }

    /** One commit of a transaction branch, one- or two-phase. */
    @Name("org.leasehold.Commit")
    @Label("Branch Commit")
    @Category("Leasehold")
    @StackTrace(false)
    @Description("The commit of a transaction branch: the messages written as one frame, the leases released")
    static final class Commit extends Event {
        @Label("Log")
        String log;
        @Label("Branch")
        String branch;
        @Label("One Phase")
        boolean onePhase;
        @Label("Leases")
        int leaseCount;
        @Label("Messages")
        int messageCount;
        @Label("Outcome")
        @Description("committed, rollback, heuristic rollback, heuristic hazard, heuristic commit, or the XA error")
        String outcome;
    }

    /** One rollback of a transaction branch. */
    @Name("org.leasehold.Rollback")
    @Label("Branch Rollback")
    @Category("Leasehold")
    @StackTrace(false)
    @Description("The rollback of a transaction branch: its leases released without a watermark")
    static final class Rollback extends Event {
        @Label("Log")
        String log;
        @Label("Branch")
        String branch;
        @Label("Prepared")
        @Description("Whether the branch had been prepared")
        boolean prepared;
        @Label("Leases")
        int leaseCount;
        @Label("Messages")
        @Description("Messages buffered by the branch, not written")
        int messageCount;
        @Label("Outcome")
        @Description("rolled back, or the XA error")
        String outcome;
    }
}
