package org.leasehold.peers;

import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicLong;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;

/**
 * PostgreSQL as a lease table: acquire is one upsert that takes the row if it is free or its lease has expired, release
 * clears the expiry if the row still carries the holder's token. Each statement commits on its own (autocommit), on a
 * HikariCP pool; a busy name is retried with {@link Backoff}.
 */
final class PostgresLockClient implements LockClient<PostgresLockClient.Held> {
    private static final String CREATE = "CREATE TABLE IF NOT EXISTS peer_lease ("
            + "name text PRIMARY KEY, token bigint NOT NULL, expires_at timestamptz NOT NULL)";
    private static final String ACQUIRE = "INSERT INTO peer_lease (name, token, expires_at) "
            + "VALUES (?, ?, now() + make_interval(secs => ?)) "
            + "ON CONFLICT (name) DO UPDATE SET token = EXCLUDED.token, expires_at = EXCLUDED.expires_at "
            + "WHERE peer_lease.expires_at <= now()";
    private static final String RELEASE = "UPDATE peer_lease SET expires_at = '-infinity' WHERE name = ? AND token = ?";

    private final HikariDataSource pool;
    private final AtomicLong tokens = new AtomicLong(new SecureRandom().nextLong() & 0x7fff_ffff_0000_0000L);

    /** A held row: the name and the token written into it. */
    record Held(String name, long token) {
    }

    PostgresLockClient(String jdbcUrl, String user, int poolSize) throws SQLException {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(jdbcUrl);
        config.setUsername(user);
        config.setMaximumPoolSize(poolSize);
        config.setMinimumIdle(poolSize);
        config.setAutoCommit(true);
        config.setPoolName("peer-benchmark");
        this.pool = new HikariDataSource(config);
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            s.execute(CREATE);
        }
    }

    @Override
    public String system() {
        return "postgresql";
    }

    @Override
    public Held acquire(String name) throws Exception {
        long token = tokens.incrementAndGet();
        Backoff backoff = null;
        while (true) {
            int taken;
            try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement(ACQUIRE)) {
                ps.setString(1, name);
                ps.setLong(2, token);
                ps.setDouble(3, LEASE_TIME.toMillis() / 1000.0);
                taken = ps.executeUpdate();
            }
            if (taken == 1) {
                return new Held(name, token);
            }
            if (backoff == null) {
                backoff = new Backoff(name);
            }
            backoff.pause();
        }
    }

    @Override
    public void release(Held held) throws SQLException {
        try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement(RELEASE)) {
            ps.setString(1, held.name());
            ps.setLong(2, held.token());
            if (ps.executeUpdate() != 1) {
                throw new IllegalStateException("the lease row of " + held.name() + " was no longer ours at release");
            }
        }
    }

    @Override
    public void close() {
        pool.close();
    }
}
