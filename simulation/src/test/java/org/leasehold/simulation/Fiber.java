package org.leasehold.simulation;

import java.util.concurrent.Semaphore;

/**
 * One simulated activity of a machine (its writer, its sealer, its reader): a thread that runs only when the
 * {@link Scheduler} hands it control, and hands it back at every step. Its steps take simulated time: the scheduler
 * resumes it when the step is over. A fiber whose machine crashed is killed at its next step: {@link SimCrash} unwinds
 * the real code it was running, as the end of the process would.
 */
final class Fiber {
    private final Scheduler scheduler;
    private final Machine machine;
    private final String name;
    private final Semaphore go = new Semaphore(0);
    private final Thread thread;
    private volatile boolean killed;
    private volatile boolean done;
    private volatile Throwable failure;

    /** A fiber that runs {@code body} from true time {@code startAt}. */
    Fiber(Scheduler scheduler, Machine machine, String name, Body body, long startAt) {
        this.scheduler = scheduler;
        this.machine = machine;
        this.name = name;
        this.thread = new Thread(() -> {
            go.acquireUninterruptibly();
            try {
                if (!killed) {
                    body.run(this);
                }
            } catch (SimCrash c) {
                // The machine crashed: the activity ends where it was, as a killed process does.
            } catch (Throwable t) {
                failure = t;
            } finally {
                done = true;
                scheduler.handBack();
            }
        }, "sim-" + name);
        thread.setDaemon(true);
        thread.start();
        scheduler.resumeAt(startAt, this);
    }

    /** What a fiber runs. */
    interface Body {
        void run(Fiber f) throws Exception;
    }

    Machine machine() {
        return machine;
    }

    String name() {
        return name;
    }

    boolean killed() {
        return killed;
    }

    boolean done() {
        return done;
    }

    /** An unexpected exception that ended the fiber (a bug in the simulation or in the code under test), or null. */
    Throwable failure() {
        return failure;
    }

    /** Marks the fiber killed; it ends at its next step, when the scheduler next resumes it. */
    void kill() {
        killed = true;
    }

    /** Scheduler side: lets the fiber run until its next step. */
    void go() {
        if (done) {
            scheduler.handBack();
            return;
        }
        go.release();
    }

    /** Fiber side: one step that takes {@code micros} of true time; the other fibers and timers run meanwhile. */
    void step(long micros) {
        if (killed) {
            throw new SimCrash();
        }
        long at = scheduler.now() + Math.max(0, micros);
        if (machine.pausedUntil() <= at && scheduler.nothingBefore(at)) {
            // This fiber's resumption would be the next event anyway: skip the hand-over (same run, much faster).
            scheduler.advanceTo(at);
            return;
        }
        scheduler.resumeAt(at, this);
        scheduler.handBack();
        go.acquireUninterruptibly();
        if (killed) {
            throw new SimCrash();
        }
    }

    /** Fiber side: waits until this machine's clock reads at least {@code localMicros}. */
    void sleepUntilLocal(long localMicros) {
        long at = machine.clock().trueTimeOf(localMicros);
        step(Math.max(1, at - scheduler.now()));
    }

    /** Fiber side: waits {@code micros} of this machine's clock. */
    void sleep(long micros) {
        sleepUntilLocal(machine.clock().nowMicros() + micros);
    }
}
