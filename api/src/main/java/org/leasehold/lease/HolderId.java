package org.leasehold.lease;

import java.util.Objects;

/**
 * Who holds a lease: a process (a JVM, stable across its restarts if the deployment wants re-take after a
 * crash) and an owner inside it (a thread or a transaction). A request from the identity that already holds
 * a name re-takes it at once (the previous incarnation's lease ends as {@link Ending#RETAKEN}); two
 * concurrent writers must therefore never share one identity.
 *
 * @param process the process, for example {@code host-a/payara-1}
 * @param owner   the thread or transaction inside the process
 */
public record HolderId(String process, String owner) {

    public HolderId {
        Objects.requireNonNull(process, "HolderId.process");
        Objects.requireNonNull(owner, "HolderId.owner");
    }

    /** The identity of the calling thread inside {@code process}. */
    public static HolderId currentThread(String process) {
        Thread t = Thread.currentThread();
        return new HolderId(process, "thread/" + t.getName() + "#" + t.getId());
    }

    /** The identity of a transaction (by its global id) inside {@code process}. */
    public static HolderId transaction(String process, String transactionId) {
        return new HolderId(process, "tx/" + transactionId);
    }

    @Override
    public String toString() {
        return process + "!" + owner;
    }
}
