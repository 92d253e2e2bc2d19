package org.leasehold.it.crash;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

import javax.naming.InitialContext;
import javax.naming.NameNotFoundException;
import javax.naming.NamingException;
import javax.sql.DataSource;

import jakarta.annotation.Resource;
import jakarta.ejb.Stateless;
import jakarta.ejb.TransactionAttribute;
import jakarta.ejb.TransactionAttributeType;
import jakarta.transaction.TransactionManager;

import org.leasehold.LeaseholdException;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.connector.LeaseConnectionFactory;
import org.leasehold.lease.Lease;

/**
 * One JTA transaction over three resources: a row in the database, a Leasehold message, and optionally a
 * {@link CrashGate} enlisted before or after the adapter's connection.
 */
@Stateless
public class CrashEjb {
    public static final String FACTORY = "eis/leasehold/crash";
    public static final String DATABASE = "jdbc/leasehold-crash";

    @Resource(lookup = FACTORY)
    private LeaseConnectionFactory leases;
    @Resource(lookup = DATABASE)
    private DataSource db;

    /**
     * Writes {@code text} as a row and as a message under the lease {@code crash/<text>}; with a gate, stops in its
     * phase. {@code gateFirst} enlists the gate before the adapter's connection, else after it.
     */
    public void run(String text, CrashGate.Phase gate, boolean gateFirst, int expected, boolean halt)
            throws Exception {
        CrashGate g = gate == null ? null : new CrashGate(text, gate, expected, halt, markers());
        if (g != null && gateFirst) {
            enlist(g);
        }
        try (Connection c = db.getConnection(); PreparedStatement insert = c.prepareStatement(
                "INSERT INTO crash_rows(text) VALUES (?)")) {
            insert.setString(1, text);
            insert.executeUpdate();
        }
        try (LeaseConnection c = leases.getConnection()) {
            c.acquire("crash/" + text);
            c.append(text.getBytes(StandardCharsets.UTF_8));
        }
        if (g != null && !gateFirst) {
            enlist(g);
        }
    }

    /**
     * Writes {@code text} as a message under the lease {@code name} (no database row) and returns the grant; with
     * {@code fail}, then fails with a system exception, so that the container rolls the transaction back.
     */
    public Lease record(String name, String text, boolean fail) throws LeaseholdException {
        Lease lease;
        try (LeaseConnection c = leases.getConnection()) {
            lease = c.acquire(name);
            c.append(text.getBytes(StandardCharsets.UTF_8));
        }
        if (fail) {
            throw new IllegalStateException("forced failure after appending '" + text + "'");
        }
        return lease;
    }

    /** Where the servers bind their transaction manager (not a standard name): Payara's, then WildFly's. */
    private static final String[] TRANSACTION_MANAGERS = {"java:appserver/TransactionManager",
        "java:jboss/TransactionManager"};

    private static TransactionManager transactionManager() throws NamingException {
        for (String name : TRANSACTION_MANAGERS) {
            try {
                return InitialContext.doLookup(name);
            } catch (NameNotFoundException e) {
                // Not this server.
            }
        }
        throw new NameNotFoundException("no transaction manager under " + String.join(" or ", TRANSACTION_MANAGERS));
    }

    private static void enlist(CrashGate g) throws Exception {
        TransactionManager tm = transactionManager();
        if (!tm.getTransaction().enlistResource(g)) {
            throw new IllegalStateException("the transaction manager refused the crash gate");
        }
    }

    private static Path markers() {
        String dir = System.getProperty("leasehold.crash.markers");
        if (dir == null) {
            throw new IllegalStateException("the system property leasehold.crash.markers is not set");
        }
        return Path.of(dir);
    }

    /** How many committed rows hold {@code text}. */
    @TransactionAttribute(TransactionAttributeType.NOT_SUPPORTED)
    public int rows(String text) throws SQLException {
        try (Connection c = db.getConnection(); PreparedStatement q = c.prepareStatement(
                "SELECT COUNT(*) FROM crash_rows WHERE text = ?")) {
            q.setString(1, text);
            try (ResultSet rs = q.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    @TransactionAttribute(TransactionAttributeType.NOT_SUPPORTED)
    public void createTable() throws SQLException {
        try (Connection c = db.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE IF NOT EXISTS crash_rows(id IDENTITY PRIMARY KEY, text VARCHAR(200) NOT NULL)");
        }
    }
}
