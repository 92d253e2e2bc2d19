package org.leasehold.adapter;

import java.util.Timer;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import jakarta.resource.spi.BootstrapContext;
import jakarta.resource.spi.XATerminator;
import jakarta.resource.spi.work.ExecutionContext;
import jakarta.resource.spi.work.Work;
import jakarta.resource.spi.work.WorkContext;
import jakarta.resource.spi.work.WorkException;
import jakarta.resource.spi.work.WorkListener;
import jakarta.resource.spi.work.WorkManager;
import jakarta.resource.spi.work.WorkRejectedException;
import jakarta.transaction.TransactionSynchronizationRegistry;

/**
 * A bootstrap context for running the adapter outside a server: a work manager backed by a thread pool (which a test
 * can make refuse work, as an overloaded container would) and the transaction manager's synchronization registry.
 */
final class TestBootstrapContext implements BootstrapContext, AutoCloseable {
    private final ExecutorService pool = Executors.newFixedThreadPool(2, r -> {
        Thread t = new Thread(r, "test-work-manager");
        t.setDaemon(true);
        return t;
    });
    private final TransactionSynchronizationRegistry tsr;
    final AtomicBoolean refuseWork = new AtomicBoolean();
    /** Work scheduled and not yet finished; guarded by {@code this}. */
    private int inFlight;

    TestBootstrapContext(TransactionSynchronizationRegistry tsr) {
        this.tsr = tsr;
    }

    private final WorkManager workManager = new WorkManager() {
        @Override
        public void doWork(Work work) throws WorkException {
            check();
            work.run();
        }

        @Override
        public void doWork(Work work, long startTimeout, ExecutionContext ctx, WorkListener listener)
                throws WorkException {
            doWork(work);
        }

        @Override
        public long startWork(Work work) throws WorkException {
            scheduleWork(work);
            return 0;
        }

        @Override
        public long startWork(Work work, long startTimeout, ExecutionContext ctx, WorkListener listener)
                throws WorkException {
            scheduleWork(work);
            return 0;
        }

        @Override
        public void scheduleWork(Work work) throws WorkException {
            check();
            synchronized (TestBootstrapContext.this) {
                inFlight++;
            }
            pool.execute(() -> {
                try {
                    work.run();
                } finally {
                    synchronized (TestBootstrapContext.this) {
                        inFlight--;
                        TestBootstrapContext.this.notifyAll();
                    }
                }
            });
        }

        @Override
        public void scheduleWork(Work work, long startTimeout, ExecutionContext ctx, WorkListener listener)
                throws WorkException {
            scheduleWork(work);
        }

        private void check() throws WorkRejectedException {
            if (refuseWork.get()) {
                throw new WorkRejectedException("the test work manager refuses work");
            }
        }
    };

    @Override
    public WorkManager getWorkManager() {
        return workManager;
    }

    @Override
    public XATerminator getXATerminator() {
        return null;
    }

    @Override
    public Timer createTimer() {
        return new Timer(true);
    }

    @Override
    public boolean isContextSupported(Class<? extends WorkContext> workContextClass) {
        return false;
    }

    @Override
    public TransactionSynchronizationRegistry getTransactionSynchronizationRegistry() {
        return tsr;
    }

    /** Waits for queued work to finish (renewals triggered by a clock jump, say). */
    synchronized void drain() throws Exception {
        // Every piece of scheduled work, on either pool thread (an empty task behind it on the other would not do).
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (inFlight > 0) {
            long left = until - System.nanoTime();
            if (left <= 0) {
                throw new java.util.concurrent.TimeoutException(inFlight + " pieces of work still running after 10 s");
            }
            TimeUnit.NANOSECONDS.timedWait(this, left);
        }
    }

    @Override
    public void close() {
        pool.shutdownNow();
    }
}
