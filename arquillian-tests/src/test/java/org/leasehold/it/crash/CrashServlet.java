package org.leasehold.it.crash;

import java.io.IOException;

import jakarta.ejb.EJB;
import jakarta.servlet.annotation.WebServlet;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

/**
 * The crash test's remote control: {@code /tx?text=T[&gate=PREPARE|COMMIT&gateFirst=B&expected=N&halt=B]} runs one
 * transaction, {@code /rows?text=T} counts committed rows.
 */
@WebServlet(urlPatterns = {"/tx", "/rows"})
public class CrashServlet extends HttpServlet {
    private static final long serialVersionUID = 1L;
    private static final System.Logger LOG = System.getLogger(CrashServlet.class.getName());

    @EJB
    private CrashEjb ejb;

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        resp.setContentType("text/plain");
        String text = req.getParameter("text");
        if (text == null || !text.matches("[A-Za-z0-9-]{1,100}")) {
            resp.sendError(400, "text must be 1 to 100 letters, digits or '-'");
            return;
        }
        try {
            if (req.getServletPath().equals("/rows")) {
                resp.getWriter().print(ejb.rows(text));
                return;
            }
            ejb.createTable();
            String gate = req.getParameter("gate");
            ejb.run(text, gate == null ? null : CrashGate.Phase.valueOf(gate),
                    Boolean.parseBoolean(req.getParameter("gateFirst")),
                    Integer.parseInt(req.getParameter("expected") == null ? "1" : req.getParameter("expected")),
                    Boolean.parseBoolean(req.getParameter("halt")));
            resp.getWriter().print("committed");
        } catch (Exception e) {
            LOG.log(System.Logger.Level.WARNING, "transaction " + text + " failed", e);
            resp.setStatus(500);
            resp.getWriter().print("failed: " + e);
        }
    }
}
