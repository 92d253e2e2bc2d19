package org.leasehold.etcd;

import java.io.File;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.IntConsumer;
import java.util.function.ObjLongConsumer;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.ClientBuilder;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.op.RangeCmp;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import io.grpc.ClientInterceptor;
import io.grpc.stub.StreamObserver;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.LeaseServiceUnavailableException;

/**
 * The service's etcd: the keys of its prefix, consistent reads of several names at one revision, transactions that
 * commit only if nothing they read changed, this front's etcd lease, and the watch that wakes queued requests.
 *
 * <p>Keys: {@code <prefix>n/<name>} holds a name's {@link NameRecord}; {@code <prefix>w/<name>\0<id>} one queued
 * request ({@link WaiterRecord}); {@code <prefix>h/<holder>\0<id>} the same request filed under its holder (the
 * holder's process and owner, each in unpadded base64url, joined by a dot), whose value is the end of its wait, so that
 * whether a holder waits is one read. Names contain no control character, so {@code \0} ends a name unambiguously.
 * Every call waits at most the configured call timeout; a call that fails or times out becomes a
 * {@link LeaseServiceUnavailableException} saying which endpoints did not answer.
 */
final class EtcdStore implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(EtcdStore.class.getName());

    /** One name as read: its record (null if the key does not exist) and its queued requests, oldest first. */
    record Read(NameRecord record, List<WaiterRecord> waiters) {
    }

    private final EtcdConfig config;
    private final Client client;
    private final String prefix;
    private final long timeoutMillis;
    private volatile long sessionLease;
    private volatile io.etcd.jetcd.support.CloseableClient keepAlive;
    private volatile Watch.Watcher watcher;
    /**
     * Watches that failed or were not confirmed since etcd last confirmed one: the level of their messages, and the
     * caller's pace of retries ({@link #watch}'s {@code onGap}).
     */
    private volatile int gapsInARow;
    private volatile boolean closed;

    EtcdStore(EtcdConfig config) {
        this(config, List.of());
    }

    /**
     * With {@code interceptors} on every call to etcd (tests use one to hold back or break the watch's stream at a
     * chosen moment).
     */
    EtcdStore(EtcdConfig config, List<ClientInterceptor> interceptors) {
        this.config = config;
        this.prefix = config.prefix();
        this.timeoutMillis = config.callTimeout().toMillis();
        ClientBuilder b = Client.builder().endpoints(config.endpoints().toArray(new URI[0]))
                .connectTimeout(config.callTimeout()).retryMaxDuration(config.callTimeout())
                .keepaliveTime(Duration.ofSeconds(5)).keepaliveTimeout(config.callTimeout());
        if (!interceptors.isEmpty()) {
            b.interceptors(interceptors);
        }
        if (config.user() != null) {
            b.user(bytes(config.user())).password(bytes(config.password()));
        }
        if (config.trustCertificates() != null || config.clientCertificate() != null
                || config.endpoints().stream().anyMatch(u -> "https".equalsIgnoreCase(u.getScheme()))) {
            try {
                b.sslContext(ssl -> {
                    if (config.trustCertificates() != null) {
                        ssl.trustManager(config.trustCertificates().toFile());
                    }
                    if (config.clientCertificate() != null) {
                        File cert = config.clientCertificate().toFile();
                        File key = config.clientKey().toFile();
                        ssl.keyManager(cert, key);
                    }
                });
            } catch (javax.net.ssl.SSLException e) {
                throw new IllegalArgumentException("the TLS settings for etcd (trust " + config.trustCertificates()
                        + ", cert " + config.clientCertificate() + ") cannot be used: " + e.getMessage()
                        + "; give PEM files (the key in PKCS#8)", e);
            }
        }
        this.client = b.build();
    }

    String endpoints() {
        return config.endpoints().toString();
    }

    // ------------------------------------------------------------------------------------------------ keys

    ByteSequence nameKey(String name) {
        return bytes(prefix + "n/" + name);
    }

    ByteSequence waiterPrefix(String name) {
        return bytes(prefix + "w/" + name + "\0");
    }

    ByteSequence waiterKey(String name, String id) {
        return bytes(prefix + "w/" + name + "\0" + id);
    }

    /** A holder as it appears in keys: its process and owner in unpadded base64url, joined by a dot. */
    static String holderPart(HolderId holder) {
        Base64.Encoder b64 = Base64.getUrlEncoder().withoutPadding();
        return b64.encodeToString(holder.process().getBytes(StandardCharsets.UTF_8)) + "."
                + b64.encodeToString(holder.owner().getBytes(StandardCharsets.UTF_8));
    }

    ByteSequence holderWaitPrefix(String holderPart) {
        return bytes(prefix + "h/" + holderPart + "\0");
    }

    ByteSequence holderWaitKey(String holderPart, String id) {
        return bytes(prefix + "h/" + holderPart + "\0" + id);
    }

    /** The holder (as {@link #holderPart}) a key of this prefix files a queued request under, or null. */
    String holderOf(ByteSequence key) {
        String k = key.toString(StandardCharsets.UTF_8);
        if (!k.startsWith(prefix) || !k.startsWith("h/", prefix.length())) {
            return null;
        }
        int end = k.indexOf('\0', prefix.length() + 2);
        return end < 0 ? null : k.substring(prefix.length() + 2, end);
    }

    /** The name a key of this prefix is about, or null. */
    String nameOf(ByteSequence key) {
        String k = key.toString(StandardCharsets.UTF_8);
        if (!k.startsWith(prefix) || k.length() < prefix.length() + 2) {
            return null;
        }
        String rest = k.substring(prefix.length() + 2);
        if (k.startsWith("n/", prefix.length())) {
            return rest;
        }
        if (k.startsWith("w/", prefix.length())) {
            int end = rest.indexOf('\0');
            return end < 0 ? null : rest.substring(0, end);
        }
        return null;
    }

    static ByteSequence bytes(String s) {
        return ByteSequence.from(s, StandardCharsets.UTF_8);
    }

    // ------------------------------------------------------------------------------------------------ reads

    /**
     * The names that have a record under the prefix, in key order, after {@code after} (null: from the first), at most
     * {@code limit}: keys only, from the member the client asks (a serializable read, which may be a little behind).
     */
    List<String> recordNames(String after, int limit) throws LeaseServiceUnavailableException {
        ByteSequence from = after == null ? bytes(prefix + "n/") : bytes(prefix + "n/" + after + "\0");
        GetOption page = GetOption.builder().withRange(bytes(prefix + "n0")).withKeysOnly(true).withLimit(limit)
                .withSerializable(true).withSortField(GetOption.SortTarget.KEY)
                .withSortOrder(GetOption.SortOrder.ASCEND).build();
        GetResponse r = await(client.getKVClient().get(from, page), "list the names");
        List<String> names = new ArrayList<>(r.getKvs().size());
        for (KeyValue kv : r.getKvs()) {
            String name = nameOf(kv.getKey());
            if (name != null) {
                names.add(name);
            }
        }
        return names;
    }

    /**
     * Reads {@code names} and their queues in one transaction, so at one revision.
     *
     * @param initialFloor the floor of a name never written
     */
    Map<String, Read> read(Collection<String> names, long initialFloor) throws LeaseServiceUnavailableException {
        TxnResponse r = await(client.getKVClient().txn().Then(readOps(names)).commit(), "read");
        return reads(r.getGetResponses(), names, initialFloor);
    }

    /** The operations of {@link #read}: per name, its record, then its queue oldest first. */
    private Op[] readOps(Collection<String> names) {
        List<Op> ops = new ArrayList<>(2 * names.size());
        for (String n : names) {
            ops.add(Op.get(nameKey(n), GetOption.DEFAULT));
            ops.add(Op.get(waiterPrefix(n), GetOption.builder().isPrefix(true)
                    .withSortField(GetOption.SortTarget.CREATE).withSortOrder(GetOption.SortOrder.ASCEND).build()));
        }
        return ops.toArray(new Op[0]);
    }

    private static Map<String, Read> reads(List<GetResponse> gets, Collection<String> names, long initialFloor) {
        Map<String, Read> out = new LinkedHashMap<>();
        int i = 0;
        for (String n : names) {
            GetResponse state = gets.get(i++);
            GetResponse queue = gets.get(i++);
            NameRecord rec;
            if (state.getKvs().isEmpty()) {
                rec = NameRecord.fresh(n, initialFloor);
            } else {
                KeyValue kv = state.getKvs().get(0);
                rec = NameRecord.decode(n, kv.getValue().getBytes(), kv.getModRevision());
            }
            List<WaiterRecord> waiters = new ArrayList<>(queue.getKvs().size());
            for (KeyValue kv : queue.getKvs()) {
                waiters.add(WaiterRecord.decode(kv.getValue().getBytes(), kv.getCreateRevision()));
            }
            waiters.sort((a, b) -> Long.compare(a.createRevision(), b.createRevision()));
            out.put(n, new Read(rec, waiters));
        }
        return out;
    }

    /** Every name record under {@code namePrefix} and every queued request of those names, at one revision. */
    List<KeyValue>[] scan(String namePrefix) throws LeaseServiceUnavailableException {
        TxnResponse r = await(client.getKVClient().txn().Then(
                Op.get(bytes(prefix + "n/" + namePrefix), GetOption.builder().isPrefix(true).build()),
                Op.get(bytes(prefix + "w/" + namePrefix), GetOption.builder().isPrefix(true).build())).commit(), "scan");
        @SuppressWarnings("unchecked")
        List<KeyValue>[] out = new List[] {r.getGetResponses().get(0).getKvs(), r.getGetResponses().get(1).getKvs()};
        return out;
    }

    /**
     * Which of {@code holders} (as {@link #holderPart}) have a request queued whose wait ends after {@code now}, read
     * at one revision, and that revision.
     */
    Waiting waiting(Collection<String> holders, long now) throws LeaseServiceUnavailableException {
        List<Op> ops = new ArrayList<>(holders.size());
        for (String h : holders) {
            ops.add(Op.get(holderWaitPrefix(h), GetOption.builder().isPrefix(true).build()));
        }
        TxnResponse r = await(client.getKVClient().txn().Then(ops.toArray(new Op[0])).commit(), "read of waits");
        Set<String> out = new HashSet<>();
        int i = 0;
        for (String h : holders) {
            for (KeyValue kv : r.getGetResponses().get(i).getKvs()) {
                byte[] v = kv.getValue().getBytes();
                if (v.length != Long.BYTES || ByteBuffer.wrap(v).getLong() > now) {
                    out.add(h);
                    break;
                }
            }
            i++;
        }
        return new Waiting(out, r.getHeader().getRevision());
    }

    /** The holders found waiting by {@link #waiting}, and the revision they were read at. */
    record Waiting(Set<String> holders, long revision) {
    }

    // ------------------------------------------------------------------------------------------------ writes

    /** Compares that {@code rec} is as read. */
    Cmp unchanged(NameRecord rec) {
        return new Cmp(nameKey(rec.name), Cmp.Op.EQUAL, CmpTarget.modRevision(rec.modRevision));
    }

    /** Compares that a queued request's key still exists (it vanishes with its front's etcd lease). */
    Cmp exists(ByteSequence key) {
        return new Cmp(key, Cmp.Op.GREATER, CmpTarget.createRevision(0));
    }

    /** Compares that no request is queued for {@code name}: no key of its queue exists. */
    Cmp noWaiters(String name) {
        return new RangeCmp(waiterPrefix(name), Cmp.Op.EQUAL, CmpTarget.createRevision(0));
    }

    Op put(NameRecord rec) {
        return put(rec.name, rec.encode());
    }

    /** Writes {@code value}, a {@link NameRecord}'s encoding, as the record of {@code name}. */
    Op put(String name, byte[] value) {
        return Op.put(nameKey(name), ByteSequence.from(value), PutOption.DEFAULT);
    }

    Op putWaiter(String name, WaiterRecord w, long lease) {
        return Op.put(waiterKey(name, w.id()), ByteSequence.from(w.encode()),
                PutOption.builder().withLeaseId(lease).build());
    }

    Op deleteWaiter(String name, String id) {
        return Op.delete(waiterKey(name, id), DeleteOption.DEFAULT);
    }

    /** Files queued request {@code id} under its holder, with the end of its wait (micros of service time). */
    Op putHolderWait(String holderPart, String id, long waitUntil, long lease) {
        return Op.put(holderWaitKey(holderPart, id),
                ByteSequence.from(ByteBuffer.allocate(Long.BYTES).putLong(waitUntil).array()),
                PutOption.builder().withLeaseId(lease).build());
    }

    Op deleteHolderWait(String holderPart, String id) {
        return Op.delete(holderWaitKey(holderPart, id), DeleteOption.DEFAULT);
    }

    /** What {@link #commitOrRead} did: committed at {@code revision}, or (revision -1) read {@code reads} instead. */
    record Outcome(long revision, Map<String, Read> reads) {
    }

    /**
     * Commits, or if a comparison fails reads {@code names} and their queues as {@link #read} does, in the same
     * transaction (its {@code Else}): one round trip whichever way it goes.
     */
    Outcome commitOrRead(List<Cmp> compares, List<Op> ops, Collection<String> names, long initialFloor, String what)
            throws LeaseServiceUnavailableException {
        TxnResponse r = await(client.getKVClient().txn().If(compares.toArray(new Cmp[0]))
                .Then(ops.toArray(new Op[0])).Else(readOps(names)).commit(), what);
        return r.isSucceeded() ? new Outcome(r.getHeader().getRevision(), null)
                : new Outcome(-1, reads(r.getGetResponses(), names, initialFloor));
    }

    /** Commits; returns the revision of the writes, or -1 if a comparison failed (something changed meanwhile). */
    long commit(List<Cmp> compares, List<Op> ops, String what) throws LeaseServiceUnavailableException {
        TxnResponse r = await(client.getKVClient().txn().If(compares.toArray(new Cmp[0]))
                .Then(ops.toArray(new Op[0])).commit(), what);
        return r.isSucceeded() ? r.getHeader().getRevision() : -1;
    }

    // ------------------------------------------------------------------------------------------------ session

    /**
     * This front's etcd lease, granted (and kept alive) on first use and again after it was lost: the queued requests'
     * keys are attached to it, so they vanish when the front is gone.
     */
    long session() throws LeaseServiceUnavailableException {
        long id = sessionLease;
        if (id != 0) {
            return id;
        }
        synchronized (this) {
            if (sessionLease != 0) {
                return sessionLease;
            }
            long granted = await(client.getLeaseClient().grant(config.sessionTtl().toSeconds()), "lease grant").getID();
            keepAlive = client.getLeaseClient().keepAlive(granted, new StreamObserver<LeaseKeepAliveResponse>() {
                @Override
                public void onNext(LeaseKeepAliveResponse r) {
                    if (r.getTTL() <= 0) {
                        lost(granted, "etcd says it expired");
                    }
                }

                @Override
                public void onError(Throwable t) {
                    lost(granted, String.valueOf(t));
                }

                @Override
                public void onCompleted() {
                    lost(granted, "keep-alive ended");
                }
            });
            sessionLease = granted;
            return granted;
        }
    }

    private void lost(long id, String why) {
        synchronized (this) {
            if (sessionLease == id) {
                sessionLease = 0;
                if (!closed) {
                    LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-7003 etcd lease {0} of this front was lost ({1}): "
                            + "its queued requests lose their places and queue again", Long.toHexString(id), why);
                }
            }
        }
    }

    // ------------------------------------------------------------------------------------------------ watch

    /**
     * Watches every key of the prefix from the revision at which etcd creates the watch on: {@code onName} gets the
     * name of each change and its revision; {@code onHolderWaits} the holder (as {@link #holderPart}) of each request
     * filed under its holder (a request that starts waiting), and its revision; {@code onCreated} is called once etcd
     * confirms the watch (from then on the watch reports every change after the revision it was created at, so what
     * the caller reads after {@code onCreated} and what the watch reports together cover every change); {@code onGap}
     * is called once when the watch failed, or was not confirmed within the call timeout (changes may have been
     * missed: a member or the network went away, it fell behind a compaction, or etcd refused it), with the number of
     * watches that failed in a row so far, this one included; the failed watch is closed at once, and the caller
     * starts a new one (so that one watch, never several, serves the service, whatever jetcd would have resumed).
     */
    void watch(ObjLongConsumer<String> onName, ObjLongConsumer<String> onHolderWaits, Runnable onCreated,
            IntConsumer onGap) {
        if (closed) {
            return;
        }
        Watch.Watcher[] self = new Watch.Watcher[1];
        AtomicBoolean created = new AtomicBoolean();
        AtomicBoolean over = new AtomicBoolean();
        Watch.Listener listener = Watch.listener((WatchResponse r) -> {
            if (r.isCreatedNotify()) {
                if (!over.get() && created.compareAndSet(false, true)) {
                    gapsInARow = 0;
                    onCreated.run();
                }
                return;
            }
            for (WatchEvent e : r.getEvents()) {
                String name = nameOf(e.getKeyValue().getKey());
                if (name != null) {
                    onName.accept(name, e.getKeyValue().getModRevision());
                } else if (e.getEventType() == WatchEvent.EventType.PUT) {
                    String holder = holderOf(e.getKeyValue().getKey());
                    if (holder != null) {
                        onHolderWaits.accept(holder, e.getKeyValue().getModRevision());
                    }
                }
            }
        }, (Throwable t) -> {
            if (closed || !over.compareAndSet(false, true)) {
                return;
            }
            int n = ++gapsInARow;
            LOG.log(gapLevel(n), "LEASEHOLD-7004 the etcd watch of prefix {0} failed ({1}; {2} in a row): "
                    + "watching again and waking every queued request", prefix, String.valueOf(t), String.valueOf(n));
            closeFailed(self);
            onGap.accept(n);
        });
        synchronized (self) {
            self[0] = client.getWatchClient().watch(bytes(prefix), WatchOption.builder().isPrefix(true)
                    .withCreateNotify(true).build(), listener);
            watcher = self[0];
        }
        // A watch etcd never confirms (its create request lost with a stream that stays open) wakes nothing: it is
        // given up after the call timeout of real time, as any call is, and replaced.
        CompletableFuture.delayedExecutor(timeoutMillis, TimeUnit.MILLISECONDS).execute(() -> {
            if (closed || created.get() || !over.compareAndSet(false, true)) {
                return;
            }
            int n = ++gapsInARow;
            LOG.log(gapLevel(n), "LEASEHOLD-7012 the etcd watch of prefix {0} was not confirmed by {1} within {2} ms "
                    + "({3} failures in a row): watching again and waking every queued request", prefix,
                    config.endpoints(), String.valueOf(timeoutMillis), String.valueOf(n));
            closeFailed(self);
            onGap.accept(n);
        });
    }

    /**
     * The level of the report of the {@code n}-th failed watch in a row: a warning for the first three and every
     * twelfth after them (once a minute or so while etcd keeps refusing, at the service's slowest retry), the others
     * at debug level, so that a cluster that stays away is reported without a warning every few hundred ms.
     */
    static System.Logger.Level gapLevel(int n) {
        return n <= 3 || n % 12 == 0 ? System.Logger.Level.WARNING : System.Logger.Level.DEBUG;
    }

    /**
     * Closes a watch that failed: jetcd would otherwise resume it by itself after errors it deems passing, beside the
     * new watch the service starts.
     */
    private static void closeFailed(Watch.Watcher[] self) {
        synchronized (self) {
            if (self[0] != null) {
                self[0].close();
            }
        }
    }

    // ------------------------------------------------------------------------------------------------ calls

    private <T> T await(CompletableFuture<T> f, String what) throws LeaseServiceUnavailableException {
        try {
            return f.get(timeoutMillis, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            f.cancel(true);
            throw unavailable(what, "no answer within " + config.callTimeout().toMillis() + " ms", e);
        } catch (InterruptedException e) {
            f.cancel(true);
            Thread.currentThread().interrupt();
            throw unavailable(what, "interrupted", e);
        } catch (ExecutionException e) {
            throw unavailable(what, String.valueOf(e.getCause()), e.getCause());
        }
    }

    private LeaseServiceUnavailableException unavailable(String what, String why, Throwable cause) {
        String settings = EtcdFailures.explain(config, what, cause);
        if (settings != null) {
            return new LeaseServiceUnavailableException(null, settings, cause);
        }
        return new LeaseServiceUnavailableException(null, "etcd at " + config.endpoints() + " did not complete the "
                + what + " (" + why + "): the cluster may have lost its quorum, or this process is cut off from it; "
                + "a write that got no answer may still take effect (a grant then stands until its deadline); retry "
                + "when etcd is back", cause);
    }

    /** An instant for messages. */
    static Instant at(long micros) {
        return org.leasehold.time.Micros.toInstant(micros);
    }

    @Override
    public void close() {
        closed = true;
        Watch.Watcher w = watcher;
        if (w != null) {
            w.close();
        }
        io.etcd.jetcd.support.CloseableClient k = keepAlive;
        if (k != null) {
            k.close();
        }
        long id = sessionLease;
        if (id != 0) {
            try {
                client.getLeaseClient().revoke(id).get(timeoutMillis, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (ExecutionException | TimeoutException e) {
                LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-7005 revoking this front''s etcd lease failed: {0}",
                        String.valueOf(e));
            }
        }
        client.close();
    }
}
