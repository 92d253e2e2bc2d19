package org.leasehold.adapter;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

import org.leasehold.LeaseholdException;
import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.ViewDefinition;
import org.leasehold.bag.ViewState;
import org.leasehold.connector.UnknownViewException;
import org.leasehold.store.FileBagStore;
import org.leasehold.store.ViewSnapshotReport;
import org.leasehold.time.TimeSource;

/**
 * The materialized views of one runtime's log: reads (the store's latest readable snapshot plus the messages after
 * it, unsealed ones included), the definitions applications registered, and their snapshots, built every
 * {@code ViewBuildIntervalMillis} on the container's work manager or when an application asks.
 *
 * <p>A build pass runs at most once at a time, one view after the other, and the next pass is scheduled when it ends:
 * a slow pass delays the next one rather than piling up work. A failed build (a definition that is not deterministic,
 * that throws, or a store that fails) is logged once per view and reason ({@code LEASEHOLD-4602}), and the next pass
 * tries again; its success after a failure is logged too ({@code LEASEHOLD-4603}). Building is the store's
 * ({@link FileBagStore#buildView}): any process may build any view, and the first to publish a boundary wins.
 */
final class AdapterViews implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(AdapterViews.class.getName());

    private final String log;
    private final FileBagStore store;
    private final TimeSource time;
    private final Executor work;
    private final Duration interval;
    private final Map<String, ViewDefinition<?>> registered = new ConcurrentHashMap<>();
    /** The last reason each view's build failed, until one succeeds. */
    private final Map<String, String> failing = new ConcurrentHashMap<>();
    /** Guarded by {@code this}: a pass is scheduled or running. */
    private boolean scheduled;
    /** Guarded by {@code this}. */
    private TimeSource.Timer timer;
    /** Guarded by {@code this}. */
    private boolean closed;

    /**
     * @param interval how often registered views are built; zero for never
     * @param work     where build passes run (the container's work manager)
     */
    AdapterViews(String log, FileBagStore store, TimeSource time, Executor work, Duration interval) {
        this.log = log;
        this.store = store;
        this.time = time;
        this.work = work;
        this.interval = interval;
    }

    /** See {@link org.leasehold.connector.LeaseLog#view}. */
    <S> ViewState<S> read(ViewDefinition<S> definition) throws BagStoreException {
        return store.view(log, definition);
    }

    /** Registers {@code definition} under its name (replacing one registered before) and schedules builds. */
    void register(ViewDefinition<?> definition) {
        FileBagStore.checkView(definition);
        ViewDefinition<?> before = registered.put(definition.name(), definition);
        if (before != definition) {
            failing.remove(definition.name());
            LOG.log(System.Logger.Level.INFO, "LEASEHOLD-4601 view ''{0}'' (version ''{1}'', {2}) registered for log "
                    + "''{3}''{4}: {5}", definition.name(), definition.version(), definition.getClass().getName(), log,
                    before == null ? "" : ", replacing " + before.getClass().getName(),
                    interval.isZero() ? "ViewBuildIntervalMillis is 0, so the adapter builds no snapshot of it"
                            : "a snapshot every " + interval.toMillis() + " ms");
        }
        synchronized (this) {
            if (!scheduled) {
                scheduleNext();
            }
        }
    }

    /** Stops building {@code definition}; false if it is not the one registered under its name. */
    boolean unregister(ViewDefinition<?> definition) {
        String name = definition.name();
        if (name == null || !registered.remove(name, definition)) {
            return false;
        }
        failing.remove(name);
        return true;
    }

    /** The names of the registered views, sorted. */
    List<String> names() {
        return new ArrayList<>(new TreeMap<>(registered).keySet());
    }

    /**
     * Publishes a snapshot of the registered view {@code name} at the latest sealed boundary now, unless one is there.
     *
     * @return the snapshot's boundary
     * @throws UnknownViewException no view is registered as {@code name}
     */
    Instant build(String name) throws LeaseholdException {
        ViewDefinition<?> d = name == null ? null : registered.get(name);
        if (d == null) {
            List<String> known = names();
            throw new UnknownViewException("no view is registered as '" + name + "' for log '" + log + "'"
                    + (known.isEmpty() ? "; none is: " : "; the registered views are " + known + ": ")
                    + "register the definition with the connection factory (LeaseConnectionFactory.registerView; the "
                    + "CDI integration registers the application's ViewDefinition beans when it starts) before building "
                    + "it");
        }
        return store.buildView(log, d, Instant.MAX).boundary();
    }

    /** Schedules the next pass an interval from now, if views are registered and building is on. Holds the monitor. */
    private void scheduleNext() {
        if (closed || interval.isZero() || registered.isEmpty()) {
            scheduled = false;
            return;
        }
        scheduled = true;
        timer = time.scheduleAfter(interval.toNanos() / 1_000, this::due);
    }

    /** On the timer thread: hands the pass to the work manager. */
    private void due() {
        try {
            work.execute(this::pass);
        } catch (RejectedExecutionException e) {
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4604 the view snapshots of log ''{0}'' were not built: {1}; "
                    + "they are tried again in {2} ms", log, e.getMessage(), String.valueOf(interval.toMillis()));
            synchronized (this) {
                scheduleNext();
            }
        }
    }

    /** Builds every registered view once, then schedules the next pass. */
    void pass() {
        try {
            for (ViewDefinition<?> d : registered.values()) {
                synchronized (this) {
                    if (closed) {
                        return;
                    }
                }
                buildQuietly(d);
            }
        } finally {
            synchronized (this) {
                scheduleNext();
            }
        }
    }

    private void buildQuietly(ViewDefinition<?> d) {
        String problem;
        try {
            ViewSnapshotReport r = store.buildView(log, d, Instant.MAX);
            if (failing.remove(d.name()) != null) {
                LOG.log(System.Logger.Level.INFO, "LEASEHOLD-4603 view ''{0}'' of log ''{1}'' was built again: snapshot "
                        + "at {2}", d.name(), log, r.boundary());
            }
            return;
        } catch (BagStoreException e) {
            problem = e.getMessage();
        } catch (RuntimeException e) {
            // The application's fold or encoding threw.
            problem = "the definition (" + d.getClass().getName() + ") threw " + e;
        }
        if (registered.get(d.name()) == d && !problem.equals(failing.put(d.name(), problem))) {
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4602 no snapshot of view ''{0}'' of log ''{1}'' could be "
                    + "built: {2}. Reads of the view start from its latest snapshot (or the beginning of the log) until "
                    + "a build succeeds; the next is tried in {3} ms", d.name(), log, problem, String.valueOf(interval.toMillis()));
        }
    }

    @Override
    public synchronized void close() {
        closed = true;
        if (timer != null) {
            timer.cancel();
        }
        registered.clear();
        failing.clear();
    }
}
