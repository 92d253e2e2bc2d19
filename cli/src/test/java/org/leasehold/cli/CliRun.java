package org.leasehold.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.Writer;
import java.util.ArrayList;
import java.util.List;

import org.leasehold.time.TimeSource;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * One in-process run of the CLI ({@link LeaseholdCli#execute}) with its exit code, standard output and standard error.
 *
 * @param code the exit code
 * @param out  what it printed on standard output
 * @param err  what it printed on standard error
 */
record CliRun(int code, String out, String err) {

    static CliRun of(TimeSource time, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = LeaseholdCli.execute(time, new PrintWriter(out), new PrintWriter(err), false, args);
        return new CliRun(code, out.toString(), err.toString());
    }

    /** The output's lines. */
    List<String> lines() {
        List<String> l = new ArrayList<>();
        for (String s : out.split("\n")) {
            if (!s.isEmpty()) {
                l.add(s);
            }
        }
        return l;
    }

    /** The output's lines, each parsed as JSON. */
    List<JsonNode> json() throws Exception {
        List<JsonNode> l = new ArrayList<>();
        for (String s : lines()) {
            l.add(Json.MAPPER.readTree(s));
        }
        return l;
    }

    /** The lines of standard error. */
    List<String> errLines() {
        List<String> l = new ArrayList<>();
        for (String s : err.split("\n")) {
            if (!s.isEmpty()) {
                l.add(s);
            }
        }
        return l;
    }

    @Override
    public String toString() {
        return "exit " + code + "\n--- stdout\n" + out + "--- stderr\n" + err;
    }

    /** A writer whose text a test can wait for, from another thread. */
    static final class Awaitable extends Writer {
        private final StringBuilder text = new StringBuilder();

        @Override
        public synchronized void write(char[] buf, int off, int len) {
            text.append(buf, off, len);
            notifyAll();
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }

        synchronized String text() {
            return text.toString();
        }

        /** Waits until the text contains {@code s}, at most {@code millis}; false if it did not come. */
        synchronized boolean await(String s, long millis) throws InterruptedException {
            long end = System.nanoTime() + millis * 1_000_000L;
            while (text.indexOf(s) < 0) {
                long left = (end - System.nanoTime()) / 1_000_000L;
                if (left <= 0) {
                    return false;
                }
                wait(left);
            }
            return true;
        }
    }
}
