package org.leasehold.samples.ledger.app;

import java.sql.SQLException;
import java.util.LinkedHashMap;
import java.util.Map;

import jakarta.ejb.EJBException;
import jakarta.inject.Inject;
import jakarta.ws.rs.BadRequestException;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;

import org.leasehold.LeaseholdException;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseLostException;

/**
 * The benchmark's endpoints: the same HTTP and EJB path for both resources, so that the resource is the only
 * difference. Each call is one container-managed JTA transaction; the answer carries the server-side time of the
 * bean call ({@code micros}: transaction begin, work, commit), measured around it.
 */
@Path("/bench")
@Produces(MediaType.APPLICATION_JSON)
public class BenchResource {

    /** One benchmark transaction. */
    @FunctionalInterface
    private interface Transaction {
        void run() throws Exception;
    }

    @Inject
    LeaseholdBench leasehold;

    @Inject
    PostgresBench postgres;

    @Inject
    EmptyBench empty;

    /** One exclusive lease {@code bench/<key>} and one 256-byte message, in one JTA transaction. */
    @POST
    @Path("/leasehold")
    public Response leasehold(@QueryParam("key") Integer key) {
        int k = checkKey(key);
        return timed(() -> leasehold.leaseAndAppend(k));
    }

    /** A row lock on {@code bench_lock} and one 256-byte insert into {@code bench_message}, in one JTA transaction. */
    @POST
    @Path("/postgres")
    public Response postgres(@QueryParam("key") Integer key) {
        int k = checkKey(key);
        return timed(() -> postgres.lockAndInsert(k));
    }

    /** The floor: the same path and a JTA transaction with no resource in it. */
    @POST
    @Path("/empty")
    public Response empty(@QueryParam("key") Integer key) {
        int k = checkKey(key);
        return timed(() -> empty.nothing(k));
    }

    /** Messages stored in the benchmark's log, read back from the bag store. */
    @GET
    @Path("/leasehold/stored")
    public Response leaseholdStored() {
        try {
            return Response.ok(Map.of("messages", leasehold.storedMessages())).build();
        } catch (BenchNotConfiguredException e) {
            return answer(503, "NOT_CONFIGURED", e, 0);
        } catch (LeaseholdException e) {
            return answer(500, "FAILED", e, 0);
        }
    }

    /** Lock rows {@code 0 .. keys-1} present, and messages stored, in PostgreSQL. */
    @GET
    @Path("/postgres/stored")
    public Response postgresStored(@QueryParam("keys") Integer keys) {
        int n = keys == null ? 0 : keys;
        try {
            long[] counts = postgres.lockRowsAndMessages(n);
            return Response.ok(Map.of("lockRows", counts[0], "messages", counts[1])).build();
        } catch (BenchNotConfiguredException e) {
            return answer(503, "NOT_CONFIGURED", e, 0);
        } catch (SQLException e) {
            return answer(500, "FAILED", e, 0);
        }
    }

    /** PostgreSQL's version and the settings that decide what a commit costs. */
    @GET
    @Path("/postgres/settings")
    public Response postgresSettings() {
        try {
            return Response.ok(postgres.settings()).build();
        } catch (BenchNotConfiguredException e) {
            return answer(503, "NOT_CONFIGURED", e, 0);
        } catch (SQLException e) {
            return answer(500, "FAILED", e, 0);
        }
    }

    private static int checkKey(Integer key) {
        if (key == null || key < 0) {
            throw new BadRequestException("give key >= 0");
        }
        return key;
    }

    private static Response timed(Transaction t) {
        long t0 = System.nanoTime();
        try {
            t.run();
            return Response.ok(Map.of("outcome", "COMMITTED", "micros", micros(t0))).build();
        } catch (LeaseBusyException e) {
            return answer(503, "BUSY", e, micros(t0));
        } catch (LeaseLostException e) {
            return answer(409, "LOST", e, micros(t0));
        } catch (BenchNotConfiguredException e) {
            return answer(503, "NOT_CONFIGURED", e, micros(t0));
        } catch (EJBException e) {
            // The transaction rolled back (a tentative lease broken by an older transaction, a failed commit...).
            return answer(409, "ROLLED_BACK", e, micros(t0));
        } catch (Exception e) {
            return answer(500, "FAILED", e, micros(t0));
        }
    }

    private static long micros(long t0) {
        return (System.nanoTime() - t0) / 1_000;
    }

    private static Response answer(int status, String outcome, Exception e, long micros) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("outcome", outcome);
        body.put("reason", String.valueOf(e));
        body.put("micros", micros);
        return Response.status(status).entity(body).build();
    }
}
