package org.leasehold.samples.ledger.app;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServer;
import javax.management.ObjectName;

import jakarta.annotation.Resource;
import jakarta.ejb.EJBException;
import jakarta.inject.Inject;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;

import org.leasehold.LeaseholdException;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.StampedLease;
import org.leasehold.bag.ViewState;
import org.leasehold.connector.AdapterMetricsMBean;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.connector.LeaseConnectionFactory;
import org.leasehold.inject.LeaseView;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseLostException;

/**
 * The ledger over HTTP: open accounts, transfer, check the whole log against the balances view, show how the balances
 * started and the adapter's figures, publish a snapshot of the view.
 */
@Path("/ledger")
@Produces(MediaType.APPLICATION_JSON)
public class LedgerResource {

    @Inject
    Ledger ledger;

    @Inject
    Accounts accounts;

    @Inject
    Balances balances;

    @Inject
    LeaseView<TreeMap<Integer, BalanceView.Account>> view;

    @Resource(lookup = "leasehold/Ledger")
    LeaseConnectionFactory leases;

    @POST
    @Path("/open")
    public Map<String, Object> open(@QueryParam("accounts") int count, @QueryParam("balance") long balance)
            throws LeaseholdException {
        if (count < 2 || balance < 0) {
            throw new jakarta.ws.rs.BadRequestException("give accounts >= 2 and balance >= 0");
        }
        accounts.open(count, balance);
        return Map.of("accounts", count, "balance", balance);
    }

    @POST
    @Path("/transfer")
    public Response transfer(@QueryParam("from") int from, @QueryParam("to") int to, @QueryParam("amount") long amount) {
        try {
            return Response.ok(Map.of("outcome", ledger.transfer(from, to, amount).name())).build();
        } catch (LeaseBusyException e) {
            return Response.status(503).entity(Map.of("outcome", "BUSY", "reason", e.getMessage())).build();
        } catch (LeaseLostException e) {
            return Response.status(409).entity(Map.of("outcome", "LOST", "reason", e.getMessage())).build();
        } catch (LeaseholdException e) {
            return Response.status(500).entity(Map.of("outcome", "FAILED", "reason", e.getMessage())).build();
        } catch (EJBException e) {
            // The transaction rolled back (a lease broken by an older transaction, say): nothing was written.
            return Response.status(409).entity(Map.of("outcome", "ROLLED_BACK", "reason", String.valueOf(e))).build();
        }
    }

    /**
     * Replays the whole log in order and checks it: money conserved, no account ever below zero, each account's
     * entries in lease order (generations and timestamps both increasing), and the balances view (latest snapshot plus
     * the entries after it) gives the balances of the replay.
     */
    @GET
    @Path("/check")
    public Map<String, Object> check() throws LeaseholdException {
        Map<Integer, Long> balance = new TreeMap<>();
        Map<String, long[]> lastByLease = new HashMap<>();
        List<String> problems = new ArrayList<>();
        long opened = 0;
        long messages = 0;
        long tentative = 0;
        try (LeaseConnection c = leases.getConnection(); MessageStream s = c.read(ReadRequest.all(c.log()))) {
            Message m;
            while ((m = s.next()) != null) {
                messages++;
                if (m.tentative()) {
                    tentative++;
                }
                Entry e = Entry.parse(m.payload());
                if (e.kind().equals("open")) {
                    opened += e.amount();
                    balance.merge(e.from(), e.amount(), Long::sum);
                } else {
                    balance.merge(e.from(), -e.amount(), Long::sum);
                    balance.merge(e.to(), e.amount(), Long::sum);
                    if (balance.get(e.from()) < 0 && problems.size() < 20) {
                        problems.add("account " + e.from() + " below zero at " + m.timestamp());
                    }
                }
                long micros = m.timestamp().getEpochSecond() * 1_000_000L + m.timestamp().getNano() / 1_000;
                for (StampedLease l : m.leases()) {
                    long[] last = lastByLease.get(l.name());
                    boolean sameFrame = last != null && l.generation() == last[0] && micros == last[1];
                    boolean inOrder = last == null || sameFrame || (l.generation() > last[0] && micros > last[1]);
                    if (!inOrder && problems.size() < 20) {
                        problems.add(l.name() + ": entry at " + m.timestamp() + " (generation " + l.generation()
                                + ") does not follow generation " + last[0] + " in lease order");
                    }
                    lastByLease.put(l.name(), new long[] {l.generation(), micros});
                }
            }
        } catch (org.leasehold.bag.UnknownLogException e) {
            problems.add("the log does not exist yet: open the accounts first");
        }
        long total = balance.values().stream().mapToLong(Long::longValue).sum();
        if (total != opened) {
            problems.add("money not conserved: balances add up to " + total + ", " + opened + " was opened");
        }
        ViewState<TreeMap<Integer, BalanceView.Account>> v = view.read();
        Map<Integer, Long> fromView = new TreeMap<>();
        v.state().forEach((account, a) -> fromView.put(account, a.balance()));
        if (!fromView.equals(balance)) {
            problems.add("the balances view gives " + fromView + ", the replay " + balance);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("messages", messages);
        out.put("tentativeMessages", tentative);
        out.put("accounts", balance.size());
        out.put("opened", opened);
        out.put("total", total);
        out.put("balances", balance);
        out.put("viewSnapshotBoundary", v.boundary() == null ? null : v.boundary().toString());
        out.put("viewTailMessages", v.tailMessages());
        out.put("viewMatches", fromView.equals(balance));
        out.put("problems", problems);
        out.put("ok", problems.isEmpty());
        return out;
    }

    /** How the balances started: from which snapshot of the view, and how many entries after it were applied. */
    @GET
    @Path("/view")
    public Map<String, Object> viewStart() {
        return balances.started();
    }

    /** Publishes a snapshot of the balances view at the latest sealed boundary now (the adapter also does, regularly). */
    @POST
    @Path("/view/build")
    public Map<String, Object> buildView() throws LeaseholdException {
        return Map.of("snapshotBoundary", view.build().toString());
    }

    /** The adapter's figures, from its MBean. */
    @GET
    @Path("/stats")
    public Map<String, Object> stats() throws Exception {
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        Map<String, Object> out = new TreeMap<>();
        Set<ObjectName> names = server.queryNames(new ObjectName(AdapterMetricsMBean.OBJECT_NAME_PATTERN), null);
        for (ObjectName n : names) {
            for (MBeanAttributeInfo a : server.getMBeanInfo(n).getAttributes()) {
                Object v = server.getAttribute(n, a.getName());
                if (v instanceof Number num) {
                    out.merge(a.getName(), num.longValue(), (x, y) -> ((Long) x) + ((Long) y));
                }
            }
        }
        return out;
    }
}
