package org.leasehold.peers;

import java.util.concurrent.TimeUnit;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.JedisPooled;

/**
 * Redis's transport ceiling through each of its clients: a {@code PING} as "acquire" and another as "release", on the
 * same client set-up as {@code redis-jedis} (a pooled connection per thread) or {@code redis-lettuce} (one shared,
 * pipelined connection). It takes no lock: it is the most any lock call through that client and server could do.
 */
final class RedisPingClient implements LockClient<String> {
    private final String system;
    private final JedisPooled jedis;
    private final RedisClient lettuce;
    private final StatefulRedisConnection<String, String> connection;
    private final RedisAsyncCommands<String, String> async;

    private RedisPingClient(String system, JedisPooled jedis, RedisClient lettuce) {
        this.system = system;
        this.jedis = jedis;
        this.lettuce = lettuce;
        this.connection = lettuce != null ? lettuce.connect() : null;
        this.async = connection != null ? connection.async() : null;
    }

    /** Through Jedis, pooled as {@code redis-jedis} is. */
    static RedisPingClient jedis(String host, int port, int poolSize) {
        ConnectionPoolConfig pool = new ConnectionPoolConfig();
        pool.setMaxTotal(poolSize);
        pool.setMaxIdle(poolSize);
        pool.setMinIdle(poolSize);
        return new RedisPingClient("redis-jedis-ping", new JedisPooled(pool, host, port), null);
    }

    /** Through Lettuce's one shared asynchronous connection, as {@code redis-lettuce} is. */
    static RedisPingClient lettuce(String host, int port) {
        return new RedisPingClient("redis-lettuce-ping", null, RedisClient.create(RedisURI.create(host, port)));
    }

    @Override
    public String system() {
        return system;
    }

    @Override
    public String acquire(String name) throws Exception {
        ping();
        return name;
    }

    @Override
    public void release(String name) throws Exception {
        ping();
    }

    private void ping() throws Exception {
        String pong = jedis != null ? jedis.ping() : async.ping().get(MAX_WAIT.toMillis(), TimeUnit.MILLISECONDS);
        if (!"PONG".equals(pong)) {
            throw new IllegalStateException("Redis answered PING with " + pong);
        }
    }

    @Override
    public void close() {
        if (jedis != null) {
            jedis.close();
        } else {
            connection.close();
            lettuce.shutdown();
        }
    }
}
