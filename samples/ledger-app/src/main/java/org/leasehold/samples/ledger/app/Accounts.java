package org.leasehold.samples.ledger.app;

import java.util.ArrayList;
import java.util.List;

import jakarta.annotation.Resource;
import jakarta.ejb.Stateless;

import org.leasehold.LeaseholdException;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.connector.LeaseConnectionFactory;
import org.leasehold.connector.LeaseOptions;

/** Opening accounts, with the connection factory used directly: all accounts' leases, one entry each. */
@Stateless
public class Accounts {

    @Resource(lookup = "leasehold/Ledger")
    LeaseConnectionFactory leases;

    public void open(int count, long balance) throws LeaseholdException {
        List<String> names = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            names.add(Entry.leaseName(i));
        }
        try (LeaseConnection c = leases.getConnection()) {
            c.acquire(LeaseOptions.of(names));
            byte[][] entries = new byte[count][];
            for (int i = 0; i < count; i++) {
                entries[i] = Entry.open(i, balance).bytes();
            }
            c.append(entries);
        }
    }
}
