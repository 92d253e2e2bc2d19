package org.leasehold.etcd;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import io.etcd.jetcd.api.WatchRequest;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall.SimpleForwardingClientCall;
import io.grpc.ForwardingClientCallListener.SimpleForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;

/**
 * A gRPC interceptor on one service's calls to etcd that places a watch's faults at chosen moments: it breaks the
 * current watch stream, holds back the create request of the next watch (etcd creates that watch only when the test
 * lets the request go, or never), and counts the key-value calls that completed, so that a test can tell when the
 * service's reads after a fault are done.
 */
final class WatchGate implements ClientInterceptor {
    private final AtomicInteger createsToHold = new AtomicInteger();
    private final List<Runnable> held = new CopyOnWriteArrayList<>();
    private final Semaphore heldArrived = new Semaphore(0);
    private final AtomicLong keyValueCallsDone = new AtomicLong();
    private volatile ClientCall<?, ?> lastWatch;

    @Override
    public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
        ClientCall<Q, R> call = next.newCall(method, options);
        if (method.getFullMethodName().equals("etcdserverpb.Watch/Watch")) {
            ClientCall<Q, R> watch = new SimpleForwardingClientCall<>(call) {
                @Override
                public void sendMessage(Q message) {
                    if (message instanceof WatchRequest w && w.hasCreateRequest()
                            && createsToHold.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                        held.add(() -> super.sendMessage(message));
                        heldArrived.release();
                    } else {
                        super.sendMessage(message);
                    }
                }
            };
            lastWatch = watch;
            return watch;
        }
        if ("etcdserverpb.KV".equals(method.getServiceName())) {
            return new SimpleForwardingClientCall<>(call) {
                @Override
                public void start(Listener<R> listener, Metadata headers) {
                    super.start(new SimpleForwardingClientCallListener<>(listener) {
                        @Override
                        public void onClose(Status status, Metadata trailers) {
                            keyValueCallsDone.incrementAndGet();
                            super.onClose(status, trailers);
                        }
                    }, headers);
                }
            };
        }
        return call;
    }

    /** The next watch created is not confirmed: its create request waits for {@link #letHeldGo}. */
    void holdNextCreate() {
        createsToHold.incrementAndGet();
    }

    /** Breaks the stream of the watch last started, as a network fault or a member going away would. */
    void breakWatch() {
        lastWatch.cancel("the test breaks the watch's stream", null);
    }

    /** Whether a held create request arrived within {@code seconds}. */
    boolean awaitHeld(long seconds) throws InterruptedException {
        return heldArrived.tryAcquire(seconds, TimeUnit.SECONDS);
    }

    /** Sends the create requests held so far (those of watches not closed meanwhile reach etcd). */
    void letHeldGo() {
        for (Runnable r : held) {
            held.remove(r);
            r.run();
        }
    }

    long keyValueCallsDone() {
        return keyValueCallsDone.get();
    }

    /** Waits until more than {@code count} key-value calls completed; whether they did within {@code seconds}. */
    boolean awaitKeyValueCallsAbove(long count, long seconds) throws InterruptedException {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (keyValueCallsDone.get() <= count) {
            if (System.nanoTime() > until) {
                return false;
            }
            Thread.sleep(5); // the service's calls run on its own threads and signal nothing
        }
        return true;
    }
}
