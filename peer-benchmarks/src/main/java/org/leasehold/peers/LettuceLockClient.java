package org.leasehold.peers;

import java.util.concurrent.TimeUnit;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;

/**
 * Redis through Lettuce, the asynchronous client: one connection shared by every thread, so the commands of all
 * threads are pipelined on it (written as they come, answered in order, no connection per thread).
 */
final class LettuceLockClient implements LockClient<RedisScripts.Held> {
    private final RedisClient client;
    private final StatefulRedisConnection<String, String> connection;
    private final RedisAsyncCommands<String, String> async;
    private final RedisScripts scripts = new RedisScripts();
    private final String releaseSha;

    LettuceLockClient(String host, int port) throws Exception {
        this.client = RedisClient.create(RedisURI.create(host, port));
        this.connection = client.connect();
        this.async = connection.async();
        this.releaseSha = async.scriptLoad(RedisScripts.COMPARE_AND_DELETE).get(5, TimeUnit.SECONDS);
    }

    @Override
    public String system() {
        return "redis-lettuce";
    }

    @Override
    public RedisScripts.Held acquire(String name) throws Exception {
        String key = RedisScripts.key(name);
        String token = scripts.token();
        SetArgs args = SetArgs.Builder.nx().px(LEASE_TIME.toMillis());
        Backoff backoff = null;
        while (!"OK".equals(async.set(key, token, args).get(MAX_WAIT.toMillis(), TimeUnit.MILLISECONDS))) {
            if (backoff == null) {
                backoff = new Backoff(name);
            }
            backoff.pause();
        }
        return new RedisScripts.Held(key, token);
    }

    @Override
    public void release(RedisScripts.Held held) throws Exception {
        Long deleted = async.<Long>evalsha(releaseSha, ScriptOutputType.INTEGER, new String[] {held.key()}, held.token())
                .get(MAX_WAIT.toMillis(), TimeUnit.MILLISECONDS);
        if (deleted == null || deleted != 1L) {
            throw new IllegalStateException("the lock " + held.key() + " was no longer ours at release");
        }
    }

    @Override
    public void close() {
        connection.close();
        client.shutdown();
    }
}
