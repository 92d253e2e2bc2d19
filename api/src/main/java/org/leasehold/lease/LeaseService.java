package org.leasehold.lease;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Strict, short leases on logical names, with fencing generations and watermark hand-off. The embedded engine,
 * the remote client and other backends implement it with the same semantics, checked by one contract test.
 *
 * <h2>Guarantees</h2>
 * <ul>
 *   <li>Full exclusive leases on one name never overlap in service time. A full lease is never broken before its
 *       deadline; after the deadline it is over, whatever the holder believes.
 *   <li>Generations of a name strictly increase with every grant, also across restarts of the service.
 *   <li>Every grant carries a floor and a {@code writableFrom} (see {@link LeaseGrant}); a holder that writes only
 *       timestamps in {@code (floor, deadline)}, from {@code writableFrom} on, and publishes the highest one as its
 *       watermark on release, never orders a write before one of a previous holder.
 *   <li>Multi-name requests are all or nothing and taken in canonical order; waiting is fair per name, woken by
 *       release or expiry: first come, first served, except that the embedded engine (and the lease server) serves
 *       a request with an earlier {@link LeaseRequest#startedAt()} first, so that no transaction waits behind a younger
 *       one (the etcd backend keeps arrival order).
 *   <li>Tentative leases may be broken at any time by an older requester (wound-wait); a younger one waits. The
 *       upgrade to full fails cleanly once any name was broken.
 *   <li>After it starts, the service grants nothing during a quiet period (at least the maximum lease duration plus
 *       grace), so that every lease a previous incarnation granted is over.
 *   <li>Every refused call changes nothing.
 * </ul>
 *
 * <p>All instants are in service time; {@link #now()} reads it.
 */
public interface LeaseService extends AutoCloseable {

    /** A stable identity of this lease service (used to tell resource managers apart). */
    String serviceId();

    /** The service's current time. */
    Instant now();

    /** When the service grants again after its quiet period (in the past once it is over). */
    Instant availableFrom();

    /**
     * Acquires every name of the request, or none. Waits up to {@link LeaseRequest#maxWait()} (fair: see the class
     * comment); a zero wait tries once.
     *
     * @throws InvalidLeaseRequestException      the request is malformed (the reason says how)
     * @throws LeaseBusyException                not granted within the wait
     * @throws LeaseServiceUnavailableException  quiet period (or service unreachable) for longer than the wait
     * @throws InterruptedException              the calling thread was interrupted while waiting; nothing is held
     */
    Lease acquire(LeaseRequest request) throws LeaseException, InterruptedException;

    /**
     * Like {@link #acquire} without blocking: the future completes with the lease or with one of {@link #acquire}'s
     * exceptions. Cancelling it withdraws the request (a lease granted concurrently is released).
     */
    CompletableFuture<Lease> acquireAsync(LeaseRequest request);

    /**
     * Upgrades a tentative lease to a full one on every name, or fails on all. The floor stays as granted.
     *
     * @param deadline a new absolute deadline (clamped to the maximum), or null to keep the current one
     * @throws LeaseBrokenException  a name was broken meanwhile: nothing may be written; start over
     * @throws LeaseExpiredException the lease's deadline passed
     * @throws StaleLeaseException   not the current holder of that generation
     */
    Lease upgrade(Lease lease, Instant deadline) throws LeaseException;

    /**
     * Moves the deadline of every name to {@code deadline} (clamped to the maximum lease duration from now, and
     * never earlier than the current deadline) and optionally records metadata.
     *
     * @throws LeaseExpiredException the deadline already passed: the lease is lost
     * @throws LeaseBrokenException  a tentative lease was broken
     * @throws StaleLeaseException   not the current holder of that generation
     */
    Lease renew(Lease lease, Instant deadline, String metadata) throws LeaseException;

    /**
     * Ends the lease on every name, publishing {@code watermark}: the highest timestamp written under it, in
     * {@code [floor, deadline)}, or null if nothing was written (the floor does not move). {@code metadata} says
     * where the holder stored its updates (kept in the names' bounded history) or is null.
     *
     * @throws InvalidLeaseRequestException watermark outside {@code [floor, deadline)} or metadata too long
     * @throws LeaseExpiredException        the deadline passed: the next holder treats the lease as expired
     * @throws LeaseBrokenException         a tentative lease was already broken
     * @return the service time at which the lease ended
     * @throws StaleLeaseException          not the current holder of that generation (already released, or foreign)
     */
    Instant release(Lease lease, Instant watermark, String metadata) throws LeaseException;

    /**
     * Fencing: true if {@code generation} is the generation of a current, unexpired full holder of {@code name}.
     * A resource that receives a write tagged with a generation can refuse it when this is false.
     */
    boolean check(String name, long generation);

    /**
     * Keeps a full lease held while its holder may be unable to renew it, until {@code until} at the latest: the lease
     * of a transaction branch that prepared, which the holder's recovery must still find its own after the holder's
     * process restarted, so that it can write what the transaction manager decides to commit. Meanwhile the service
     * renews the lease itself (its deadline stays within the maximum lease of now, so every rule about deadlines holds
     * as for a renewed lease) and nobody else is granted its names; the holder renews, releases or holds it again as
     * usual, and a restarted holder with the same identity (and principal) takes it back by renewing the lease value
     * it recorded. The hold ends at {@code until} (clamped to the service's maximum in-doubt hold), when the lease is
     * released, or when it ends otherwise; {@code inspect} shows it ({@link HolderStatus#inDoubtUntil()}).
     *
     * @return the lease as held now
     * @throws InvalidLeaseRequestException {@code until} is not after now, or the lease is tentative
     * @throws LeaseExpiredException        the lease already ended
     * @throws UnsupportedOperationException this service cannot hold leases in doubt
     */
    default Lease holdInDoubt(Lease lease, Instant until) throws LeaseException {
        throw new UnsupportedOperationException("the lease service " + serviceId() + " cannot hold a lease in doubt");
    }

    /** The admin view: every name starting with {@code prefix} (empty for all), at most {@code limit} of them. */
    List<NameStatus> inspect(String prefix, int limit);

    /** Stops the service; waiting requests fail with {@link LeaseServiceUnavailableException}. */
    @Override
    void close();

    /** Renews for {@code leaseTime} from the service's current time. */
    default Lease renewFor(Lease lease, Duration leaseTime) throws LeaseException {
        return renew(lease, now().plus(leaseTime), null);
    }

    /** Acquires and wraps the lease for try-with-resources. */
    default HeldLease hold(LeaseRequest request) throws LeaseException, InterruptedException {
        return new HeldLease(this, acquire(request));
    }
}
