package org.leasehold.cli;

import java.io.PrintStream;

import me.tongfei.progressbar.ConsoleProgressBarConsumer;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;

/**
 * A progress bar on standard error for a long command (the {@code progressbar} library draws it), or nothing when
 * standard error is not a terminal or {@code --quiet} was given.
 */
abstract class Progress implements AutoCloseable {

    /** Moves the bar on by {@code n} steps. */
    abstract void advance(long n);

    /** Moves the bar to step {@code n} of its total. */
    abstract void advanceTo(long n);

    @Override
    public abstract void close();

    /** A bar for {@code total} buckets on the process's standard error, or a silent one (see the class comment). */
    static Progress open(CliContext context, String task, long total) {
        return open(context, task, total, "buckets");
    }

    /** A bar for {@code total} steps counted in {@code unit}, or a silent one (see the class comment). */
    static Progress open(CliContext context, String task, long total, String unit) {
        return context.showProgress() ? bar(System.err, task, total, unit) : new Progress() {
            @Override
            void advance(long n) {
            }

            @Override
            void advanceTo(long n) {
            }

            @Override
            public void close() {
            }
        };
    }

    /** A bar for {@code total} buckets drawn on {@code out}. */
    static Progress bar(PrintStream out, String task, long total) {
        return bar(out, task, total, "buckets");
    }

    /** A bar for {@code total} steps counted in {@code unit}, drawn on {@code out}. */
    static Progress bar(PrintStream out, String task, long total, String unit) {
        ProgressBar bar = new ProgressBarBuilder().setTaskName(task).setInitialMax(total).setUnit(" " + unit, 1)
                .setConsumer(new ConsoleProgressBarConsumer(out)).setUpdateIntervalMillis(200).build();
        return new Progress() {
            @Override
            void advance(long n) {
                bar.stepBy(n);
            }

            @Override
            void advanceTo(long n) {
                bar.stepTo(n);
            }

            @Override
            public void close() {
                bar.close();
            }
        };
    }
}
