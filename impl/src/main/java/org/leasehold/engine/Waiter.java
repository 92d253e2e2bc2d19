package org.leasehold.engine;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseMode;
import org.leasehold.time.TimeSource;

/** A validated request: decided at once, or queued on every one of its names until granted, timed out or cancelled. */
final class Waiter {
    final HolderId holder;
    final String[] names;
    final int[] shards;
    final LeaseMode mode;
    final LeaseKind kind;
    final long age;
    /** Absolute deadline asked for, in micros, or {@link Long#MIN_VALUE} to use {@link #leaseTime}. */
    final long requestedDeadline;
    final long leaseTime;
    final long since;
    final long waitUntil;
    final CompletableFuture<Lease> future = new CompletableFuture<>();
    /** Set once, by whoever decides the outcome (grant, timeout, cancel, close). */
    final AtomicBoolean done = new AtomicBoolean();
    volatile TimeSource.Timer timeout;

    Waiter(HolderId holder, String[] names, int[] shards, LeaseMode mode, LeaseKind kind, long age,
            long requestedDeadline, long leaseTime, long since, long waitUntil) {
        this.holder = holder;
        this.names = names;
        this.shards = shards;
        this.mode = mode;
        this.kind = kind;
        this.age = age;
        this.requestedDeadline = requestedDeadline;
        this.leaseTime = leaseTime;
        this.since = since;
        this.waitUntil = waitUntil;
    }
}
