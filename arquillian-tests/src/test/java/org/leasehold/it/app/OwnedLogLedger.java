package org.leasehold.it.app;

import java.nio.charset.StandardCharsets;

import jakarta.ejb.Stateless;
import jakarta.inject.Inject;

import org.leasehold.LeaseholdException;
import org.leasehold.connector.LeaseLog;
import org.leasehold.inject.Leased;

/**
 * Appends through one of the server's two connection factories {@link #A} and {@link #B}, configured on the same store
 * and log ('owned') with different writers ('it-owned-a', 'it-owned-b'): the one whose runtime started first owns the
 * log, and the other is in the state of a second server in embedded mode on a log another one owns.
 */
@Stateless
public class OwnedLogLedger {
    public static final String A = "eis/leasehold/owned-a";
    public static final String B = "eis/leasehold/owned-b";

    @Inject
    private LeaseLog log;

    /** One transaction (container-managed): the lease on {@code account/<account>} from {@link #A}, a message. */
    @Leased(value = "account/{0}", factory = A)
    public void depositThroughA(String account, long amount) throws LeaseholdException {
        log.append(("owned-a " + account + " " + amount).getBytes(StandardCharsets.UTF_8));
    }

    /** One transaction (container-managed): the lease on {@code account/<account>} from {@link #B}, a message. */
    @Leased(value = "account/{0}", factory = B)
    public void depositThroughB(String account, long amount) throws LeaseholdException {
        log.append(("owned-b " + account + " " + amount).getBytes(StandardCharsets.UTF_8));
    }
}
