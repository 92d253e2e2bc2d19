package org.leasehold.it.crash;

import java.io.IOException;
import java.io.PrintWriter;

import javax.naming.InitialContext;

import jakarta.ejb.EJB;
import jakarta.ejb.EJBException;
import jakarta.servlet.annotation.WebServlet;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.leasehold.connector.LeaseConnectionFactory;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseGrant;

/**
 * What a lease service mode shows an application, beside the crash test's {@link CrashServlet}:
 * {@code /lease?name=N&text=T[&fail=true]} runs one transaction that writes {@code T} under the lease {@code N} (and
 * with {@code fail} rolls back) and answers {@code committed <generation> <floor in micros>} or {@code rolled back:
 * <cause>}; {@code /status?factory=<jndi>} answers the factory's {@code status()}, or the exception that looking it up
 * or asking it raised, with its causes.
 */
@WebServlet(urlPatterns = {"/lease", "/status"})
public class ModeServlet extends HttpServlet {
    private static final long serialVersionUID = 1L;

    @EJB
    private CrashEjb ejb;

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        resp.setContentType("text/plain");
        PrintWriter out = resp.getWriter();
        if (req.getServletPath().equals("/status")) {
            try {
                LeaseConnectionFactory f = InitialContext.doLookup(req.getParameter("factory"));
                out.print(f.status());
            } catch (Exception e) {
                out.print("failed:" + chain(e));
            }
            return;
        }
        String name = req.getParameter("name");
        String text = req.getParameter("text");
        try {
            Lease l = ejb.record(name, text, Boolean.parseBoolean(req.getParameter("fail")));
            LeaseGrant g = l.grant(name);
            out.print("committed " + g.generation() + " " + (g.floor().getEpochSecond() * 1_000_000L
                    + g.floor().getNano() / 1_000));
        } catch (EJBException e) {
            out.print("rolled back:" + chain(e));
        } catch (Exception e) {
            resp.setStatus(500);
            out.print("failed:" + chain(e));
        }
    }

    private static String chain(Throwable e) {
        StringBuilder b = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            b.append(' ').append(t);
        }
        return b.toString();
    }
}
