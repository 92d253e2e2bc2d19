package org.leasehold.cli;

import java.io.PrintWriter;

import org.leasehold.time.TimeSource;

/**
 * What every command of one run shares: the clock (relative times, seal lag, the follow interval), the output and
 * error streams, whether the error stream is a terminal (progress bars are drawn only there), and the global flags.
 */
final class CliContext {
    private final TimeSource time;
    private final PrintWriter out;
    private final PrintWriter err;
    private final boolean errIsTerminal;
    private boolean verbose;
    private boolean quiet;

    CliContext(TimeSource time, PrintWriter out, PrintWriter err, boolean errIsTerminal) {
        this.time = time;
        this.out = out;
        this.err = err;
        this.errIsTerminal = errIsTerminal;
    }

    TimeSource time() {
        return time;
    }

    PrintWriter out() {
        return out;
    }

    PrintWriter err() {
        return err;
    }

    /** Progress bars: only on a terminal, and not with {@code --quiet}. */
    boolean showProgress() {
        return errIsTerminal && !quiet;
    }

    boolean verbose() {
        return verbose;
    }

    void verbose(boolean v) {
        verbose = v;
    }

    boolean quiet() {
        return quiet;
    }

    void quiet(boolean v) {
        quiet = v;
    }
}
