package org.leasehold.samples.ledger.app;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Map;
import java.util.TreeMap;

import javax.naming.InitialContext;
import javax.naming.NamingException;
import javax.sql.DataSource;

import jakarta.annotation.Resource;
import jakarta.ejb.SessionContext;
import jakarta.ejb.Stateless;
import jakarta.ejb.TransactionAttribute;
import jakarta.ejb.TransactionAttributeType;

/**
 * The benchmark's baseline, the way applications do it today: in the container's JTA transaction, on a PostgreSQL
 * XA datasource, lock the key's row ({@code SELECT ... FOR UPDATE}; rows exist beforehand) and insert one 256-byte
 * message. The datasource ({@value #DATASOURCE}) exists only when the runner's benchmark mode created it, so it is
 * looked up on first use and the ledger deploys without PostgreSQL.
 */
@Stateless
public class PostgresBench {

    /** JNDI name of the datasource the benchmark mode defines. */
    static final String DATASOURCE = "jdbc/BenchPostgres";

    private static final String LOCK = "SELECT k FROM bench_lock WHERE k = ? FOR UPDATE";
    private static final String INSERT = "INSERT INTO bench_message (k, payload) VALUES (?, ?)";

    @Resource
    SessionContext context;

    private DataSource dataSource;

    /** One row lock, one insert, in the caller's (or a new) JTA transaction; rolled back on any failure. */
    @TransactionAttribute(TransactionAttributeType.REQUIRED)
    public void lockAndInsert(int key) throws SQLException, BenchNotConfiguredException {
        DataSource ds = dataSource();
        try (Connection c = ds.getConnection();
                PreparedStatement lock = c.prepareStatement(LOCK);
                PreparedStatement insert = c.prepareStatement(INSERT)) {
            lock.setInt(1, key);
            try (ResultSet r = lock.executeQuery()) {
                if (!r.next()) {
                    throw new SQLException("bench_lock has no row for key " + key + ": create the rows first "
                            + "(samples/ledger-runner/bench/postgres-schema.sql)");
                }
            }
            insert.setInt(1, key);
            insert.setBytes(2, BenchPayload.of(key));
            insert.executeUpdate();
        } catch (SQLException | RuntimeException e) {
            context.setRollbackOnly();
            throw e;
        }
    }

    /** How many of the lock rows {@code 0 .. keys-1} exist, and how many messages the table holds. */
    @TransactionAttribute(TransactionAttributeType.NOT_SUPPORTED)
    public long[] lockRowsAndMessages(int keys) throws SQLException, BenchNotConfiguredException {
        try (Connection c = dataSource().getConnection();
                PreparedStatement rows = c.prepareStatement("SELECT count(*) FROM bench_lock WHERE k >= 0 AND k < ?");
                PreparedStatement messages = c.prepareStatement("SELECT count(*) FROM bench_message")) {
            rows.setInt(1, keys);
            return new long[] {count(rows), count(messages)};
        }
    }

    /**
     * The server's version and the settings that decide what a commit costs, and the process id of one backend (a
     * runner on the same machine finds PostgreSQL's processes from it, to measure their CPU time).
     */
    @TransactionAttribute(TransactionAttributeType.NOT_SUPPORTED)
    public Map<String, String> settings() throws SQLException, BenchNotConfiguredException {
        Map<String, String> out = new TreeMap<>();
        try (Connection c = dataSource().getConnection();
                PreparedStatement s = c.prepareStatement("SELECT name, setting FROM pg_settings WHERE name IN "
                        + "('server_version', 'fsync', 'synchronous_commit', 'wal_sync_method', 'full_page_writes', "
                        + "'commit_delay', 'max_prepared_transactions', 'shared_buffers', 'max_connections')");
                ResultSet r = s.executeQuery()) {
            while (r.next()) {
                out.put(r.getString(1), r.getString(2));
            }
        }
        try (Connection c = dataSource().getConnection();
                PreparedStatement s = c.prepareStatement("SELECT pg_backend_pid()");
                ResultSet r = s.executeQuery()) {
            r.next();
            out.put("backend_pid", r.getString(1));
        }
        return out;
    }

    private static long count(PreparedStatement s) throws SQLException {
        try (ResultSet r = s.executeQuery()) {
            r.next();
            return r.getLong(1);
        }
    }

    private DataSource dataSource() throws BenchNotConfiguredException {
        if (dataSource == null) {
            try {
                dataSource = InitialContext.doLookup(DATASOURCE);
            } catch (NamingException e) {
                throw new BenchNotConfiguredException(DATASOURCE + " is not defined: the runner's benchmark mode "
                        + "creates it when given --pg-url (" + e + ")");
            }
        }
        return dataSource;
    }
}
