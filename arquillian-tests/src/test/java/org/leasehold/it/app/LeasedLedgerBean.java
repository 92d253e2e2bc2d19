package org.leasehold.it.app;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.transaction.Transactional;

import org.leasehold.LeaseholdException;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.connector.LeaseLog;
import org.leasehold.inject.Leased;
import org.leasehold.lease.Lease;

/** A CDI bean with {@code @Transactional} methods that declare their leases with {@code @Leased}. */
@ApplicationScoped
public class LeasedLedgerBean {
    @Inject
    private LeaseLog log;

    /** One transaction: leases on both accounts, one message; fails after appending when told to. */
    @Transactional
    @Leased({"account/{0}", "account/{1}"})
    public List<Lease> transfer(String from, String to, long amount, boolean fail) throws LeaseholdException {
        log.append(("cdi " + from + "->" + to + " " + amount).getBytes(StandardCharsets.UTF_8));
        List<Lease> held = log.leases();
        if (fail) {
            throw new IllegalStateException("forced failure after appending the transfer " + from + "->" + to);
        }
        return held;
    }

    /** The payloads of every message under the account's lease, read through the injected log. */
    @Transactional
    @Leased("account/{0}")
    public List<String> history(String account) throws LeaseholdException {
        List<String> out = new ArrayList<>();
        ReadRequest all = ReadRequest.all(log.log()).underAnyOf(Set.of("account/" + account));
        try (MessageStream s = log.read(all)) {
            Message m;
            while ((m = s.next()) != null) {
                out.add(new String(m.payload(), StandardCharsets.UTF_8));
            }
        }
        return out;
    }

    /** Appends without {@code @Leased}. */
    @Transactional
    public void appendWithoutLeases(String text) throws LeaseholdException {
        log.append(text.getBytes(StandardCharsets.UTF_8));
    }

    /** A lease name formed from a null argument. */
    @Transactional
    @Leased("account/{0}")
    public void touch(String account) throws LeaseholdException {
        log.append(("touch " + account).getBytes(StandardCharsets.UTF_8));
    }
}
