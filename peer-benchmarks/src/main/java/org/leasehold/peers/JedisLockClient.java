package org.leasehold.peers;

import java.util.List;

import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.params.SetParams;

/** Redis through Jedis, the plain blocking client with a connection pool (one connection per busy thread). */
final class JedisLockClient implements LockClient<RedisScripts.Held> {
    private final JedisPooled jedis;
    private final RedisScripts scripts = new RedisScripts();
    private final String releaseSha;

    JedisLockClient(String host, int port, int poolSize) {
        ConnectionPoolConfig pool = new ConnectionPoolConfig();
        pool.setMaxTotal(poolSize);
        pool.setMaxIdle(poolSize);
        pool.setMinIdle(poolSize);
        this.jedis = new JedisPooled(pool, host, port);
        this.releaseSha = jedis.scriptLoad(RedisScripts.COMPARE_AND_DELETE);
    }

    @Override
    public String system() {
        return "redis-jedis";
    }

    @Override
    public RedisScripts.Held acquire(String name) throws Exception {
        String key = RedisScripts.key(name);
        String token = scripts.token();
        SetParams params = SetParams.setParams().nx().px(LEASE_TIME.toMillis());
        Backoff backoff = null;
        while (!"OK".equals(jedis.set(key, token, params))) {
            if (backoff == null) {
                backoff = new Backoff(name);
            }
            backoff.pause();
        }
        return new RedisScripts.Held(key, token);
    }

    @Override
    public void release(RedisScripts.Held held) {
        Object deleted = jedis.evalsha(releaseSha, List.of(held.key()), List.of(held.token()));
        if (!Long.valueOf(1).equals(deleted)) {
            throw new IllegalStateException("the lock " + held.key() + " was no longer ours at release");
        }
    }

    @Override
    public void close() {
        jedis.close();
    }
}
