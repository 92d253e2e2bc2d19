package org.leasehold.remote;

import java.io.IOException;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;

import com.google.protobuf.ByteString;

import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.InvalidLeaseRequestException.Reason;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.wire.Batches;
import org.leasehold.wire.ProtoCodec;
import org.leasehold.wire.Protocol;
import org.leasehold.wire.SpinWait;
import org.leasehold.wire.WireFrames;
import org.leasehold.wire.proto.AcquireRequest;
import org.leasehold.wire.proto.EchoRequest;
import org.leasehold.wire.proto.HurryRequest;
import org.leasehold.wire.proto.ProofRequest;
import org.leasehold.wire.proto.SessionReplies;
import org.leasehold.wire.proto.SessionReply;
import org.leasehold.wire.proto.SessionRequest;
import org.leasehold.wire.proto.SessionRequests;
import org.leasehold.wire.proto.SocketHello;
import org.leasehold.wire.proto.SocketWelcome;
import org.leasehold.wire.proto.WithdrawRequest;

/**
 * The client's end of a session on the server's socket transport ({@link RemoteClientConfig.Transport#SOCKET}): one
 * TCP connection (a {@link Link}), opened on first use and again after it ends, carrying every thread's lease calls
 * for the names of this connection.
 *
 * <p>No thread of the client's stands between a caller and the socket. A caller writes its request itself (requests
 * queued by threads calling at the same time go out in one frame, written by whichever of them got there first) and
 * then, when it waits for the answer ({@link DrivenFuture#get}), reads the connection itself if no other thread is
 * reading it: one thread at a time reads, hands each answer to the thread waiting for it, and when its own answer has
 * come, passes the reading on to another waiting thread. A single thread calling in a loop therefore does its whole
 * call on its own thread, as a blocking client like Jedis does; a reader that no other thread waits beside first waits
 * actively for its answer, for up to {@link RemoteClientConfig#spinWait} ({@link SpinWait}), so that its core does not
 * fall asleep for the few microseconds the answer takes. A background thread per connection reads for answers
 * nobody waits for on their own thread (asynchronous acquisitions), and sends a keep-alive when the connection has
 * been idle for {@link Protocol#SOCKET_KEEPALIVE}: a keep-alive unanswered within the call timeout ends the
 * connection, failing its open calls with {@link LeaseServiceUnavailableException}.
 */
final class SocketSession implements SessionChannel {
    private static final System.Logger LOG = System.getLogger(SocketSession.class.getName());
    /** The longest a reader blocks in one read before it looks again at its deadline and the connection. */
    private static final long TICK_NANOS = TimeUnit.MILLISECONDS.toNanos(500);
    /** How long an idle link is read to see whether the server closed it. */
    private static final long PROBE_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    /** The most frames a reader whose answer has come reads on for others before it hands the reading on. */
    private static final int DRAIN_FRAMES = 16;

    private final Endpoint endpoint;
    private final RemoteClientConfig config;
    private final SSLContext tls;
    private final Orphans orphans;
    private final LongSupplier ids;
    /** Each entry counts in its link's {@link Link#open} while it stays. */
    private final OpenRequests<Link> requests = new OpenRequests<>(link -> link.open.decrementAndGet());
    /** The link requests go out on; null before the first and after it ended. Guarded by {@code this}. */
    private Link current;
    private boolean closed;

    SocketSession(Endpoint endpoint, RemoteClientConfig config, SSLContext tls, Orphans orphans, LongSupplier ids) {
        this.endpoint = endpoint;
        this.config = config;
        this.tls = tls;
        this.orphans = orphans;
        this.ids = ids;
    }

    @Override
    public CompletableFuture<Lease> acquire(AcquireRequest request, boolean callerWaits) {
        return send(request.getRequestId(), requests.acquisitions, SessionRequest.newBuilder().setAcquire(request),
                Proofs.ON_REQUEST, callerWaits);
    }

    @Override
    public CompletableFuture<Boolean> withdraw(long requestId, boolean callerWaits) {
        OpenRequests.Open<Lease, Link> open = requests.acquisitions.get(requestId);
        if (open == null || open.via().ended) {
            // Answered already, or its connection has ended: the server withdrew it then.
            return CompletableFuture.completedFuture(false);
        }
        return send(open.via(), requestId, requests.withdrawals, SessionRequest.newBuilder()
                .setWithdraw(WithdrawRequest.newBuilder().setRequestId(requestId)), Proofs.NONE, callerWaits);
    }

    @Override
    public CompletableFuture<OpenRequests.Reply> call(long requestId, SessionRequest.Builder request) {
        return send(requestId, requests.calls, request.setRequestId(requestId), Proofs.of(request), true);
    }

    @Override
    public void oneWay(SessionRequest.Builder request) {
        Link l;
        synchronized (this) {
            l = current;
        }
        if (l != null) {
            l.send(request.setRequestId(ids.getAsLong()).build());
        }
    }

    @Override
    public boolean onTransportThread() {
        Link l;
        synchronized (this) {
            l = current;
        }
        Thread me = Thread.currentThread();
        return l != null && (l.readerThread == me || l.background == me);
    }

    private <T> DrivenFuture<T> send(long id, Map<Long, OpenRequests.Open<T, Link>> registry,
            SessionRequest.Builder message, Proofs proofs, boolean callerWaits) {
        Link link;
        synchronized (this) {
            if (closed) {
                return DrivenFuture.failed(new LeaseServiceUnavailableException(null, "the session to lease server "
                        + endpoint.address + " is closed"));
            }
            link = current;
            if (link == null) {
                try {
                    link = connect();
                } catch (LeaseException e) {
                    return DrivenFuture.failed(e);
                }
                current = link;
            }
        }
        return send(link, id, registry, message, proofs, callerWaits);
    }

    private <T> DrivenFuture<T> send(Link link, long id, Map<Long, OpenRequests.Open<T, Link>> registry,
            SessionRequest.Builder request, Proofs proofs, boolean callerWaits) {
        SessionRequest message = proofs.wanted(request, link.proofsOnRequest).build();
        int size = message.getSerializedSize() + WireFrames.HEADER_BYTES + 8;
        if (link.maxMessageBytes > 0 && size > link.maxMessageBytes) {
            // The server would refuse the frame and close the connection, failing every other call on it too.
            return DrivenFuture.failed(new InvalidLeaseRequestException(message.hasAcquire() ? Reason.TOO_MANY_NAMES
                    : Reason.METADATA_TOO_LONG, "the " + message.getRequestCase().name().toLowerCase(Locale.ROOT)
                    + " request is " + size + " bytes, more than the " + link.maxMessageBytes + " bytes lease server "
                    + endpoint.address + " accepts in one message (its --max-message-bytes): ask for fewer names or "
                    + "send shorter metadata"));
        }
        DrivenFuture<T> f = new DrivenFuture<>(link);
        OpenRequests.Open<T, Link> open = new OpenRequests.Open<>(f, link);
        registry.put(id, open);
        link.open.incrementAndGet();
        if (link.ended && registry.remove(id, open)) {
            // Ended while registering: its end may not have seen this entry.
            link.open.decrementAndGet();
            f.completeExceptionally(link.failure);
            return f;
        }
        link.outbox.add(message);
        link.flush();
        if (!callerWaits) {
            link.needReader();
        }
        return f;
    }

    /** Opens a connection to the server's socket transport and says hello. */
    private Link connect() throws LeaseException {
        int port = endpoint.socketPort();
        try {
            return connect(port);
        } catch (LeaseServiceUnavailableException refused) {
            if (!(refused.getCause() instanceof ConnectException)) {
                throw refused;
            }
            // The port known may be a former server's: a restarted server may listen on another (port 0). The failed
            // attempt forgot the server's information; ask again.
            int now = endpoint.socketPort();
            if (now == port) {
                throw refused;
            }
            return connect(now);
        }
    }

    private Link connect(int port) throws LeaseException {
        int maxMessageBytes = endpoint.info().getMaxMessageBytes();
        String host = endpoint.host();
        int timeout = (int) Math.min(Integer.MAX_VALUE, config.callTimeout().toMillis());
        Socket raw = new Socket();
        Socket socket = raw;
        try {
            raw.setTcpNoDelay(true);
            raw.setKeepAlive(true);
            raw.connect(new InetSocketAddress(host, port), timeout);
            if (tls != null) {
                String name = config.authority() != null ? config.authority() : host;
                SSLSocket ssl = (SSLSocket) tls.getSocketFactory().createSocket(socket, name, port, true);
                SSLParameters p = ssl.getSSLParameters();
                p.setEndpointIdentificationAlgorithm("HTTPS");
                ssl.setSSLParameters(p);
                socket = ssl;
            }
            socket.setSoTimeout(timeout);
            OutputStream out = socket.getOutputStream();
            SocketHello.Builder hello = SocketHello.newBuilder().setProtocolVersion(Protocol.VERSION);
            if (config.token() != null) {
                hello.setToken(config.token());
            }
            WireFrames.write(out, hello.build());
            WireFrames.Reader in = new WireFrames.Reader(socket.getInputStream(), config.maxInboundMessageBytes());
            SocketWelcome welcome;
            try {
                welcome = in.next(SocketWelcome.parser(), "SocketWelcome");
            } catch (WireFrames.BadFrameException e) {
                throw new IOException("the answer is no socket-transport welcome (" + e.getMessage() + ")"
                        + (tls == null ? "; if the server uses TLS (--tls-cert), set tlsTrustFile" : ""), e);
            }
            if (welcome.hasError()) {
                raw.close();
                throw ProtoCodec.exception(welcome.getError(), endpoint.address + " (socket transport, port " + port + ")");
            }
            return new Link(raw, socket, out, in, maxMessageBytes, welcome.getProofsOnRequest());
        } catch (IOException e) {
            try {
                raw.close();
            } catch (IOException ignored) {
                // Closing a connection that failed: nothing more to tell.
            }
            // The server may have restarted on another socket port: ask again next time.
            endpoint.forgetInfo();
            throw new LeaseServiceUnavailableException(null, "cannot open a socket-transport connection to lease server "
                    + endpoint.address + " (" + host + ":" + port + "): " + e + "; check that the server runs, that the "
                    + "network reaches that port" + (tls == null ? "" : ", and that its certificate is signed by the "
                    + "CA in tlsTrustFile and names " + (config.authority() != null ? config.authority() : host)), e);
        }
    }

    @Override
    public void close() {
        Link l;
        synchronized (this) {
            closed = true;
            l = current;
            current = null;
        }
        if (l != null) {
            l.end(new LeaseServiceUnavailableException(null, "the session to lease server " + endpoint.address
                    + " was closed"));
        }
    }

    /**
     * A future the waiting thread completes itself: {@link #get} and {@link #join} read the connection on the calling
     * thread while no other thread does, until the answer has come. Completing it wakes the thread waiting for it.
     */
    static final class DrivenFuture<T> extends CompletableFuture<T> {
        private final Link link;
        /** What a caller about to block runs first while it is not done (null: nothing). */
        private final Runnable beforeWaiting;
        private volatile Thread waiter;

        DrivenFuture(Link link) {
            this(link, null);
        }

        DrivenFuture(Link link, Runnable beforeWaiting) {
            this.link = link;
            this.beforeWaiting = beforeWaiting;
        }

        private void beforeWaiting() {
            if (beforeWaiting != null && !isDone()) {
                beforeWaiting.run();
            }
        }

        static <T> DrivenFuture<T> failed(Throwable t) {
            DrivenFuture<T> f = new DrivenFuture<>(null);
            f.completeExceptionally(t);
            return f;
        }

        @Override
        public T get() throws InterruptedException, ExecutionException {
            beforeWaiting();
            if (link != null) {
                link.drive(this, Long.MAX_VALUE, true);
            }
            return super.get();
        }

        @Override
        public T get(long timeout, TimeUnit unit) throws InterruptedException, ExecutionException, TimeoutException {
            beforeWaiting();
            if (link != null && !isDone()) {
                long nanos = unit.toNanos(timeout);
                long deadline = nanos >= Long.MAX_VALUE / 2 ? Long.MAX_VALUE : System.nanoTime() + nanos;
                link.drive(this, deadline, true);
                if (!isDone()) {
                    throw new TimeoutException();
                }
            }
            return super.get(timeout, unit);
        }

        @Override
        public T join() {
            beforeWaiting();
            if (link != null) {
                try {
                    link.drive(this, Long.MAX_VALUE, false);
                } catch (InterruptedException e) {
                    throw new IllegalStateException("not interruptible", e);
                }
            }
            return super.join();
        }

        @Override
        public boolean complete(T value) {
            boolean done = super.complete(value);
            wake();
            return done;
        }

        @Override
        public boolean completeExceptionally(Throwable ex) {
            boolean done = super.completeExceptionally(ex);
            wake();
            return done;
        }

        @Override
        public boolean cancel(boolean mayInterruptIfRunning) {
            boolean done = super.cancel(mayInterruptIfRunning);
            wake();
            return done;
        }

        private void wake() {
            Thread t = waiter;
            if (t != null) {
                LockSupport.unpark(t);
            }
        }
    }

    /** One connection to the server's socket transport. */
    final class Link {
        /** The TCP socket: closing it ends the link at once, even under a TLS write that blocks. */
        private final Socket raw;
        /** What requests are written to and answers read from: {@link #raw}, or TLS over it. */
        private final Socket socket;
        /** The largest message the server accepts, or 0 if it did not say. */
        final int maxMessageBytes;
        private final OutputStream out;
        private final WireFrames.Reader in;
        /** The active wait of a caller reading alone for its own answer. */
        private final SpinWait spin = new SpinWait(config.spinWait());
        final Queue<SessionRequest> outbox = new ConcurrentLinkedQueue<>();
        private final AtomicBoolean flushing = new AtomicBoolean();
        /** Encodes the requests' frames; used by the one thread that sends at a time ({@link #flushing}). */
        private final WireFrames.Encoder frames = new WireFrames.Encoder();
        /** Held by the one thread reading the connection. */
        private final AtomicBoolean reading = new AtomicBoolean();
        volatile Thread readerThread;
        /** Threads waiting in {@link #drive} for an answer. */
        private final Set<Thread> drivers = ConcurrentHashMap.newKeySet();
        /** Requests sent on this link and not yet answered (or failed). */
        final AtomicInteger open = new AtomicInteger();
        final Thread background;
        volatile boolean ended;
        volatile LeaseException failure;
        private volatile long lastSentNanos = System.nanoTime();
        /** When the outstanding keep-alive was sent, or 0. */
        private volatile long pingSentNanos;
        private volatile long pingId;
        /**
         * The witnesses of the answers read here: a proof still due is a future whose caller, once it blocks, asks the
         * server to sign now ({@link #hurry}) and reads this link until the proof arrives on it; once the link has
         * ended, it fails at once (the proof would have come on it).
         */
        final ProtoCodec.WitnessReader witnesses;
        /** The server signs a grant's or renewal's witness only when asked ({@code ProofRequest}). */
        final boolean proofsOnRequest;

        Link(Socket raw, Socket socket, OutputStream out, WireFrames.Reader in, int maxMessageBytes,
                boolean proofsOnRequest) {
            this.proofsOnRequest = proofsOnRequest;
            this.witnesses = endpoint.proofs.reader(() -> new DrivenFuture<>(this, this::hurry), endpoint.address,
                    () -> ended ? failure.getMessage() : null, proofsOnRequest ? this::askProof : null);
            this.raw = raw;
            this.socket = socket;
            this.maxMessageBytes = maxMessageBytes;
            this.out = out;
            this.in = in;
            this.background = new Thread(this::background, "leasehold-socket-" + endpoint.address);
            background.setDaemon(true);
            background.start();
        }

        /**
         * Sends what is queued, joining the requests queued meanwhile into one frame (up to
         * {@link Protocol#BATCH_BYTES}): one thread writes at a time, and while it does, others' requests queue up for
         * its next frame. A thread that finds another writing leaves its request to it.
         */
        void flush() {
            Batches.send(outbox, flushing, SessionRequest::getSerializedSize, this::emit);
        }

        /**
         * Asks the server to sign the batch being gathered now rather than at the end of its linger: a caller waits for
         * a proof due on this link. One-way (no answer); tagged with a request id of its own, so that a server of an
         * earlier release, which answers it with an error, answers no request (an error for id 0 would end the link).
         */
        void hurry() {
            send(SessionRequest.newBuilder().setRequestId(ids.getAsLong()).setHurry(HurryRequest.getDefaultInstance())
                    .build());
        }

        /**
         * Asks the server for the proof of {@code statement}, a witness it sent on this link without one: one-way,
         * answered by a {@code WitnessSeals} push.
         */
        void askProof(byte[] statement) {
            send(SessionRequest.newBuilder().setRequestId(ids.getAsLong()).setProof(ProofRequest.newBuilder()
                    .addWitnesses(ByteString.copyFrom(statement))).build());
        }

        /** Queues a one-way request on this link and sends it (nothing once the link has ended). */
        void send(SessionRequest request) {
            if (ended) {
                return;
            }
            outbox.add(request);
            flush();
        }

        private void emit(List<SessionRequest> batch) {
            if (ended) {
                return; // its requests have failed with the link's end
            }
            try {
                int n = frames.encode(SessionRequests.newBuilder().addAllRequests(batch).build());
                out.write(frames.buffer(), 0, n);
                lastSentNanos = System.nanoTime();
            } catch (IOException e) {
                end(lost(e));
            }
        }

        private LeaseException lost(Exception e) {
            return new LeaseServiceUnavailableException(null, "the socket-transport connection to lease server "
                    + endpoint.address + " was lost (" + e.getMessage() + "); calls in flight may or may not have taken "
                    + "effect: retry", e);
        }

        /**
         * Waits until {@code f} is done or {@code deadline} ({@link System#nanoTime}) has passed, reading the
         * connection meanwhile whenever no other thread does.
         */
        void drive(DrivenFuture<?> f, long deadline, boolean interruptible) throws InterruptedException {
            if (f.isDone()) {
                return;
            }
            Thread me = Thread.currentThread();
            if (readerThread == me) {
                // Called from an answer's completion on the reading thread: read on for this one too.
                readUntil(f, deadline);
                return;
            }
            f.waiter = me;
            drivers.add(me);
            try {
                while (!f.isDone() && !ended) {
                    if (reading.compareAndSet(false, true)) {
                        readerThread = me;
                        try {
                            readUntil(f, deadline);
                        } finally {
                            readerThread = null;
                            reading.set(false);
                        }
                        break;
                    }
                    long left = deadline == Long.MAX_VALUE ? TICK_NANOS : deadline - System.nanoTime();
                    if (left <= 0) {
                        break;
                    }
                    LockSupport.parkNanos(this, Math.min(left, TICK_NANOS));
                    if (interruptible && Thread.interrupted()) {
                        throw new InterruptedException();
                    }
                }
            } finally {
                drivers.remove(me);
                f.waiter = null;
                handOff();
            }
        }

        /**
         * Reads and answers until {@code f} is done, the deadline passes or the link ends; then, while other threads
         * wait, answers what has already arrived (a few frames at most), so that the connection is not left unread
         * while the next reader wakes up.
         */
        private void readUntil(DrivenFuture<?> f, long deadline) {
            while (!f.isDone() && !ended) {
                long left = deadline == Long.MAX_VALUE ? TICK_NANOS : deadline - System.nanoTime();
                if (left <= 0) {
                    return;
                }
                readOnce(Math.min(left, TICK_NANOS), drivers.size() <= 1);
            }
            for (int i = 0; i < DRAIN_FRAMES && !ended && drivers.size() > 1 && arrived(); i++) {
                readOnce(TICK_NANOS, false);
            }
        }

        /** Whether bytes of a frame are there to read without waiting. */
        private boolean arrived() {
            try {
                return in.hasFrame() || socket.getInputStream().available() > 0;
            } catch (IOException e) {
                return false;
            }
        }

        /**
         * Reads one frame and hands out its answers, or returns when nothing came within {@code nanos}. With
         * {@code spin} (a caller that no other thread waits beside: its core would otherwise go idle), it first waits
         * actively for a little while ({@link RemoteClientConfig#spinWait}).
         */
        private void readOnce(long nanos, boolean spin) {
            SessionReplies batch;
            try {
                if (!in.hasFrame()) {
                    if (spin) {
                        this.spin.await(raw.getInputStream());
                    }
                    socket.setSoTimeout((int) Math.max(1, TimeUnit.NANOSECONDS.toMillis(nanos)));
                }
                batch = in.next(SessionReplies.parser(), "SessionReplies");
            } catch (SocketTimeoutException e) {
                return;
            } catch (IOException e) {
                end(lost(e));
                return;
            }
            for (SessionReply r : batch.getRepliesList()) {
                answer(this, r);
            }
        }

        /**
         * After a reader stopped: if calls are still open or a thread waits (for an answer, or a proof pushed after
         * one), lets a waiting thread (or the background) read.
         */
        private void handOff() {
            if (reading.get() || ended || open.get() == 0 && drivers.isEmpty()) {
                return;
            }
            Iterator<Thread> waiting = drivers.iterator();
            LockSupport.unpark(waiting.hasNext() ? waiting.next() : background);
        }

        /** A request nobody will wait for on their own thread was sent: make sure somebody reads. */
        void needReader() {
            if (!reading.get()) {
                LockSupport.unpark(background);
            }
        }

        /** Reads for answers no thread waits for, and keeps the connection alive. */
        private void background() {
            Thread me = Thread.currentThread();
            while (!ended) {
                LockSupport.parkNanos(this, TICK_NANOS);
                keepAlive();
                while (!ended && open.get() > 0 && drivers.isEmpty() && reading.compareAndSet(false, true)) {
                    readerThread = me;
                    try {
                        readOnce(TICK_NANOS, false);
                    } finally {
                        readerThread = null;
                        reading.set(false);
                    }
                    keepAlive();
                }
                probeIdle(me);
                handOff();
            }
        }

        /**
         * On a link idle for a tick that nobody reads, looks for at most {@link #PROBE_NANOS} whether the server has
         * closed it (a restart, its idle timeout), so that the next call opens a new connection instead of failing on
         * this one. A call made meanwhile waits at most that long for the reading.
         */
        private void probeIdle(Thread me) {
            if (ended || open.get() > 0 || !drivers.isEmpty() || System.nanoTime() - lastSentNanos < TICK_NANOS
                    || !reading.compareAndSet(false, true)) {
                return;
            }
            readerThread = me;
            try {
                readOnce(PROBE_NANOS, false);
            } finally {
                readerThread = null;
                reading.set(false);
            }
        }

        private void keepAlive() {
            if (ended) {
                return;
            }
            long now = System.nanoTime();
            long ping = pingSentNanos;
            if (ping != 0) {
                if (now - ping > config.callTimeout().toNanos()) {
                    end(new LeaseServiceUnavailableException(null, "lease server " + endpoint.address + " did not answer "
                            + "a keep-alive on its socket-transport connection within the call timeout ("
                            + config.callTimeout() + "): the connection is taken for dead; calls in flight may or may not "
                            + "have taken effect: retry"));
                }
                return;
            }
            if (now - lastSentNanos >= Protocol.SOCKET_KEEPALIVE.toNanos()) {
                long id = ids.getAsLong();
                pingId = id;
                pingSentNanos = now;
                // Counted as open, so that somebody reads its answer.
                open.incrementAndGet();
                outbox.add(SessionRequest.newBuilder().setRequestId(id).setEcho(EchoRequest.getDefaultInstance()).build());
                flush();
            }
        }

        /** Ends the link: no new request goes out on it, its open requests fail, the connection is closed. */
        void end(LeaseException why) {
            synchronized (SocketSession.this) {
                if (ended) {
                    return;
                }
                failure = why;
                ended = true;
                if (current == this) {
                    current = null;
                }
            }
            try {
                raw.close();
            } catch (IOException e) {
                LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-3104 closing the socket to {0}: {1}", endpoint.address,
                        e.getMessage());
            }
            requests.failAll(this, why);
            endpoint.proofs.sessionEnded(endpoint.address, why.getMessage());
            LockSupport.unpark(background);
            for (Thread t : drivers) {
                LockSupport.unpark(t);
            }
        }

        boolean isPing(SessionReply r) {
            if (pingSentNanos != 0 && r.getRequestId() == pingId) {
                pingSentNanos = 0;
                open.decrementAndGet();
                return true;
            }
            return false;
        }
    }

    /** Hands one answer to the request it answers. */
    private void answer(Link link, SessionReply r) {
        long id = r.getRequestId();
        if (link.isPing(r)) {
            return;
        }
        if (id == 0 && r.hasError()) {
            // The server closes the connection, and says why.
            link.end(new LeaseServiceUnavailableException(null, "lease server " + endpoint.address + " closed the "
                    + "socket-transport connection: " + r.getError().getMessage() + "; calls in flight may or may not have "
                    + "taken effect"));
            return;
        }
        requests.answer(r, endpoint.address, endpoint.proofs, link.witnesses, endpoint.signed, orphans);
    }
}
