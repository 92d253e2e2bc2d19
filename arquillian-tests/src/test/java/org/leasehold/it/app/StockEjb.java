package org.leasehold.it.app;

import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLIntegrityConstraintViolationException;
import java.sql.Statement;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;

import javax.naming.InitialContext;
import javax.naming.NameNotFoundException;
import javax.naming.NamingException;
import javax.sql.DataSource;

import jakarta.annotation.Resource;
import jakarta.ejb.EJBException;
import jakarta.ejb.SessionContext;
import jakarta.ejb.Stateless;
import jakarta.ejb.TransactionAttribute;
import jakarta.ejb.TransactionAttributeType;
import jakarta.inject.Inject;
import jakarta.transaction.TransactionManager;

import org.leasehold.LeaseholdException;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.connector.LeaseLog;
import org.leasehold.inject.Leased;

/**
 * An application that decides from database state under a lease, as users write them: each {@link #update} is one
 * container-managed transaction that takes the item's lease ({@code @Leased("item/{0}")}), reads the item's row from
 * an XA database, updates it (version + 1, decided from the row) and appends a message with the new version. It also
 * reads the item's last message in the log, which says what the row must be while the lease is held: a row behind it
 * is a stale read. The transaction enlists, in this order, the adapter (the interceptor takes the lease), a
 * {@link CommitDelay} and the database, so the database's branch commits a few milliseconds after the adapter's.
 */
@Stateless
public class StockEjb {
    /** The application's connection factory on the Arquillian tests' store (defined in the test war's web.xml). */
    public static final String FACTORY = "java:app/leasehold/stock";
    /** The application's connection factory on a store root that nothing has written before (web.xml too). */
    public static final String FRESH_FACTORY = "java:app/leasehold/fresh";
    public static final String DATABASE = LedgerEjb.DATABASE;
    private static final String[] TRANSACTION_MANAGERS = {"java:appserver/TransactionManager",
        "java:jboss/TransactionManager"};

    @Inject
    private LeaseLog log;
    @Resource(lookup = DATABASE)
    private DataSource db;
    @Resource
    private SessionContext context;

    /**
     * What one {@link #update} saw and did: the version the log's last message for the item says ({@code 0}: none),
     * the version the row had when read under the lease ({@code 0}: no row), the version written ({@code 0}: nothing,
     * the transaction was rolled back because the "first" row of the item already existed).
     */
    public record Outcome(long logVersion, long rowVersion, long written) implements Serializable {
        private static final long serialVersionUID = 1L;

        /** The row read under the lease was not what the log says it must be. */
        public boolean stale() {
            return rowVersion != logVersion;
        }

        /** The transaction inserted the item's first row, which another had inserted before (and rolled back). */
        public boolean duplicateFirstRow() {
            return written == 0;
        }
    }

    /** The payload of the message that records {@code version} of {@code item}. */
    public static String text(String item, long version) {
        return "stock " + item + " v" + version;
    }

    /** Creates the table outside any transaction (DDL would end an XA branch). */
    @TransactionAttribute(TransactionAttributeType.NOT_SUPPORTED)
    public void createTable() throws SQLException {
        try (Connection c = db.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE IF NOT EXISTS stock_items(item VARCHAR(64) PRIMARY KEY, version BIGINT NOT NULL)");
        }
    }

    /**
     * Appends a message under {@code setup/<run>} and nothing under any item, so that the log exists before the first
     * {@link #update} reads it (a log with no messages is the fresh-store test's subject, not this one's).
     */
    @Leased(value = "setup/{0}", factory = FACTORY)
    public void open(String run) throws LeaseholdException {
        log.append(("opened " + run).getBytes(StandardCharsets.UTF_8));
    }

    /**
     * One transaction under the lease on {@code item/<item>}: reads the log's last version of the item and the row,
     * writes the row's version + 1 to the row (inserting it at version 1 when there is none) and appends it. When the
     * insert finds the row there already, marks the transaction rollback-only and writes nothing. Any other failure
     * is a system exception: the container rolls the transaction back.
     */
    @Leased(value = "item/{0}", factory = FACTORY)
    public Outcome update(String item, long commitDelayMillis) {
        try {
            return updateUnderLease(item, commitDelayMillis);
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new EJBException("updating " + item + " under its lease failed: " + e, e);
        }
    }

    private Outcome updateUnderLease(String item, long commitDelayMillis) throws Exception {
        if (!transactionManager().getTransaction().enlistResource(new CommitDelay(commitDelayMillis))) {
            throw new IllegalStateException("the transaction manager refused to enlist the commit delay");
        }
        long logVersion = lastLoggedVersion(item);
        long rowVersion;
        try (Connection c = db.getConnection()) {
            rowVersion = rowVersion(c, item);
            long next = rowVersion + 1;
            if (rowVersion == 0) {
                try (PreparedStatement insert = c.prepareStatement(
                        "INSERT INTO stock_items(item, version) VALUES (?, ?)")) {
                    insert.setString(1, item);
                    insert.setLong(2, next);
                    insert.executeUpdate();
                } catch (SQLException e) {
                    if (!(e instanceof SQLIntegrityConstraintViolationException) && !"23505".equals(e.getSQLState())) {
                        throw e;
                    }
                    context.setRollbackOnly();
                    return new Outcome(logVersion, rowVersion, 0);
                }
            } else {
                try (PreparedStatement update = c.prepareStatement(
                        "UPDATE stock_items SET version = ? WHERE item = ?")) {
                    update.setLong(1, next);
                    update.setString(2, item);
                    update.executeUpdate();
                }
            }
            log.append(text(item, next).getBytes(StandardCharsets.UTF_8));
            return new Outcome(logVersion, rowVersion, next);
        }
    }

    /**
     * Reads the log under {@code item/<item>} then appends to it, on the store root that nothing has written before;
     * returns how many messages the read found.
     */
    @Leased(value = "item/{0}", factory = FRESH_FACTORY)
    public int readThenAppend(String item) throws LeaseholdException {
        int found = 0;
        try (MessageStream s = log.read(ReadRequest.all(log.log()).underAnyOf(Set.of("item/" + item)))) {
            while (s.next() != null) {
                found++;
            }
        }
        log.append(("fresh " + item + " after " + found).getBytes(StandardCharsets.UTF_8));
        return found;
    }

    /** The committed version of every item whose name starts with {@code prefix}. */
    @TransactionAttribute(TransactionAttributeType.NOT_SUPPORTED)
    public Map<String, Long> rows(String prefix) throws SQLException {
        Map<String, Long> out = new HashMap<>();
        try (Connection c = db.getConnection(); PreparedStatement q = c.prepareStatement(
                "SELECT item, version FROM stock_items WHERE item LIKE ?")) {
            q.setString(1, prefix + "%");
            try (ResultSet rs = q.executeQuery()) {
                while (rs.next()) {
                    out.put(rs.getString(1), rs.getLong(2));
                }
            }
        }
        return out;
    }

    private long lastLoggedVersion(String item) throws LeaseholdException {
        String prefix = text(item, 0).substring(0, text(item, 0).length() - 1);
        String last = null;
        try (MessageStream s = log.read(ReadRequest.all(log.log()).underAnyOf(Set.of("item/" + item)))) {
            Message m;
            while ((m = s.next()) != null) {
                last = new String(m.payload(), StandardCharsets.UTF_8);
            }
        }
        if (last == null) {
            return 0;
        }
        if (!last.startsWith(prefix)) {
            throw new IllegalStateException("the last message under item/" + item + " is '" + last + "', not a version "
                    + "of the item");
        }
        return Long.parseLong(last.substring(prefix.length()));
    }

    private static long rowVersion(Connection c, String item) throws SQLException {
        try (PreparedStatement q = c.prepareStatement("SELECT version FROM stock_items WHERE item = ?")) {
            q.setString(1, item);
            try (ResultSet rs = q.executeQuery()) {
                return rs.next() ? rs.getLong(1) : 0;
            }
        }
    }

    /** Where the servers bind their transaction manager (not a standard name): Payara's, then WildFly's. */
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
}
