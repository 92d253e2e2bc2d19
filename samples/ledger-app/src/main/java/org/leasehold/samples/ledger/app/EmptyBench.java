package org.leasehold.samples.ledger.app;

import jakarta.ejb.Stateless;
import jakarta.ejb.TransactionAttribute;
import jakarta.ejb.TransactionAttributeType;

/**
 * The benchmark's floor: the same HTTP and EJB path and a container-managed JTA transaction, with no resource in it.
 * What the other two sides cost above this is their resource.
 */
@Stateless
public class EmptyBench {

    /** Begins and commits a JTA transaction that enlists nothing. */
    @TransactionAttribute(TransactionAttributeType.REQUIRED)
    public void nothing(int key) {
        // Nothing: the container begins and commits the transaction around this call.
    }
}
