package org.leasehold.it.app;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import javax.sql.DataSource;

import jakarta.annotation.Resource;
import jakarta.ejb.Stateless;
import jakarta.ejb.TransactionAttribute;
import jakarta.ejb.TransactionAttributeType;

import org.leasehold.LeaseholdException;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.connector.LeaseConnectionFactory;
import org.leasehold.connector.LeaseOptions;
import org.leasehold.lease.Lease;

/**
 * An EJB that uses the adapter's connection factory directly (container-managed transactions, REQUIRED): each
 * business method is one transaction that takes leases and appends messages, optionally with a row in an XA database.
 */
@Stateless
public class LedgerEjb {
    public static final String FACTORY = "eis/leasehold/tx";
    public static final String DATABASE = "jdbc/leasehold-it";

    @Resource(lookup = FACTORY)
    private LeaseConnectionFactory leases;
    @Resource(lookup = DATABASE)
    private DataSource db;

    /** Takes exclusive leases on {@code names} and appends {@code messages} under them; returns the grant. */
    public Lease record(List<String> names, List<String> messages) throws LeaseholdException {
        try (LeaseConnection c = leases.getConnection()) {
            Lease lease = c.acquire(names.toArray(String[]::new));
            for (String m : messages) {
                c.append(m.getBytes(StandardCharsets.UTF_8));
            }
            return lease;
        }
    }

    /**
     * Takes a lease on {@code name} for {@code leaseTime} and appends {@code text} under it, says so through
     * {@code holding}, then asks for {@code waitFor}, which an older transaction holds, and waits for it (the
     * adapter's default wait): a transaction that waits is one whose tentative lease an older one asking for it
     * breaks (wound-wait). Returns once it has it: the container commits the transaction after that.
     */
    public void recordAndWaitFor(String name, Duration leaseTime, String text, CountDownLatch holding, String waitFor)
            throws LeaseholdException {
        try (LeaseConnection c = leases.getConnection()) {
            c.acquire(LeaseOptions.of(name).leaseFor(leaseTime));
            c.append(text.getBytes(StandardCharsets.UTF_8));
            holding.countDown();
            c.acquire(LeaseOptions.of(waitFor));
        }
    }

    /** Like {@link #record}, then fails with a system exception: the container rolls the transaction back. */
    public void recordThenFail(List<String> names, String message) throws LeaseholdException {
        record(names, List.of(message));
        throw new IllegalStateException("forced failure after appending '" + message + "'");
    }

    /** One transaction over both resources: a row in the database and a message under {@code name}. */
    public void recordWithRow(String name, String text, boolean fail) throws LeaseholdException, SQLException {
        try (Connection c = db.getConnection(); PreparedStatement insert = c.prepareStatement(
                "INSERT INTO ledger_rows(text) VALUES (?)")) {
            insert.setString(1, text);
            insert.executeUpdate();
        }
        record(List.of(name), List.of(text));
        if (fail) {
            throw new IllegalStateException("forced failure after the row and the message '" + text + "'");
        }
    }

    /** Inserts a row in the caller's transaction (no transaction of its own). */
    @TransactionAttribute(TransactionAttributeType.MANDATORY)
    public void insertRow(String text) throws SQLException {
        try (Connection c = db.getConnection(); PreparedStatement insert = c.prepareStatement(
                "INSERT INTO ledger_rows(text) VALUES (?)")) {
            insert.setString(1, text);
            insert.executeUpdate();
        }
    }

    /** How many committed rows hold {@code text}. */
    @TransactionAttribute(TransactionAttributeType.NOT_SUPPORTED)
    public int rows(String text) throws SQLException {
        try (Connection c = db.getConnection(); PreparedStatement q = c.prepareStatement(
                "SELECT COUNT(*) FROM ledger_rows WHERE text = ?")) {
            q.setString(1, text);
            try (ResultSet rs = q.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    /** Creates the table outside any transaction (DDL would end an XA branch). */
    @TransactionAttribute(TransactionAttributeType.NOT_SUPPORTED)
    public void createTable() throws SQLException {
        try (Connection c = db.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE IF NOT EXISTS ledger_rows(id IDENTITY PRIMARY KEY, text VARCHAR(200) NOT NULL)");
        }
    }
}
