package org.leasehold.adapter;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import javax.transaction.xa.XAException;
import javax.transaction.xa.XAResource;

import jakarta.resource.spi.LocalTransactionException;

/**
 * Which unit of work a managed connection's calls belong to: the transaction branch it is associated with, else its
 * local transaction, else the calling handle's own unit (outside a transaction, ended when the handle closes). The
 * XA resource, the local transaction and the handles ask it; the units themselves come from {@link Units}.
 */
final class ConnectionUnits {
    private final Units units;
    private volatile UnitOfWork xaUnit;
    private volatile UnitOfWork localUnit;
    /** Each handle's own unit, for its calls outside a transaction; created at its first call. */
    private final Map<LeaseConnectionImpl, UnitOfWork> own = new ConcurrentHashMap<>();

    ConnectionUnits(Units units) {
        this.units = units;
    }

    /** The unit {@code handle}'s call belongs to, created if it is the handle's own and it has none yet. */
    UnitOfWork forCall(LeaseConnectionImpl handle) {
        UnitOfWork u = transactional();
        return u != null ? u : own.computeIfAbsent(handle, h -> units.beginAuto());
    }

    /** The unit {@code handle}'s calls belong to now, or null if it is the handle's own and it has none yet. */
    UnitOfWork current(LeaseConnectionImpl handle) {
        UnitOfWork u = transactional();
        return u != null ? u : own.get(handle);
    }

    /** The XA branch, else the local transaction, else null. */
    private UnitOfWork transactional() {
        UnitOfWork u = xaUnit;
        return u != null ? u : localUnit;
    }

    /** Associates the connection with branch {@code xid}: a new one, or one it joins or resumes ({@code flags}). */
    void start(XidKey xid, int flags) throws XAException {
        xaUnit = (flags & (XAResource.TMJOIN | XAResource.TMRESUME)) != 0 ? units.branch(xid) : units.begin(xid);
    }

    /** Ends the association with branch {@code xid}; a failed end ({@code TMFAIL}) makes the branch roll back. */
    void end(XidKey xid, int flags) throws XAException {
        UnitOfWork u = units.branch(xid);
        if ((flags & XAResource.TMFAIL) != 0) {
            u.lost("the transaction manager ended the branch with TMFAIL");
        }
        xaUnit = null;
    }

    /** Begins a local transaction on the connection. */
    void beginLocal() throws LocalTransactionException {
        if (localUnit != null) {
            throw new LocalTransactionException("a local transaction is already active on this connection: commit or "
                    + "roll it back first");
        }
        localUnit = units.beginLocal();
    }

    /** Ends the association with the local transaction, for its {@code what} (commit or rollback). */
    UnitOfWork takeLocal(String what) throws LocalTransactionException {
        UnitOfWork u = localUnit;
        if (u == null) {
            throw new LocalTransactionException(what + " without an active local transaction on this connection");
        }
        localUnit = null;
        return u;
    }

    /** Removes and returns {@code handle}'s own unit, or null: it ends, or moves with the handle to another connection. */
    UnitOfWork takeOwn(LeaseConnectionImpl handle) {
        return own.remove(handle);
    }

    /** Takes on {@code u}, the own unit {@code handle} had on its previous connection. */
    void adoptOwn(LeaseConnectionImpl handle, UnitOfWork u) {
        if (u != null) {
            own.put(handle, u);
        }
    }

    /**
     * The container cleans the connection up: no branch any more, and the local transaction (if any) taken off it to
     * be rolled back; the handles' own units are ended by the handles.
     */
    UnitOfWork cleanup() {
        xaUnit = null;
        UnitOfWork local = localUnit;
        localUnit = null;
        return local;
    }
}
