package org.leasehold.peers;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * The floor of a client built like Leasehold's and Lettuce's, with no network at all: each call is handed from the
 * caller to one "client I/O" thread, from it to one "server" thread, which completes the caller's future; the caller
 * waits for it. Two hand-offs and a wake-up of the caller per call, as an event-loop client and an event-loop server
 * make (their sockets, encoding and work left out). It takes no lock: it is what the cores allow for the thread
 * hand-offs alone.
 */
final class LocalHandoffClient implements LockClient<String> {
    private final ExecutorService io = Executors.newSingleThreadExecutor(r -> daemon(r, "handoff-client-io"));
    private final ExecutorService server = Executors.newSingleThreadExecutor(r -> daemon(r, "handoff-server"));

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }

    @Override
    public String system() {
        return "local-handoff";
    }

    @Override
    public String acquire(String name) throws Exception {
        return call(name);
    }

    @Override
    public void release(String name) throws Exception {
        call(name);
    }

    private String call(String name) throws Exception {
        CompletableFuture<String> answer = new CompletableFuture<>();
        io.execute(() -> server.execute(() -> answer.complete(name)));
        return answer.get(MAX_WAIT.toMillis(), TimeUnit.MILLISECONDS);
    }

    @Override
    public void close() throws InterruptedException {
        io.shutdown();
        boolean stopped = io.awaitTermination(5, TimeUnit.SECONDS);
        server.shutdown();
        if (!stopped || !server.awaitTermination(5, TimeUnit.SECONDS)) {
            throw new IllegalStateException("the hand-off threads did not stop within 5 s");
        }
    }
}
