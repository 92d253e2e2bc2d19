package org.leasehold.cli;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

import org.leasehold.audit.AuditFormatException;
import org.leasehold.audit.KeySet;
import org.leasehold.audit.PublishedKeys;
import org.leasehold.cli.verify.Finding;
import org.leasehold.cli.verify.LogVerifier;
import org.leasehold.cli.verify.LogVerifier.Counter;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.time.Micros;

import com.fasterxml.jackson.databind.node.ObjectNode;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code leasehold verify}: proves a store's logs from the stored bytes and the published keys alone, or reports
 * each problem with its log, bucket, file and offset ({@link LogVerifier}). Reads only; writes nothing. Exit codes: 0
 * clean, 3 errors found, 4 warnings only (for example frames without witnesses), and as every command 1 for a
 * failure to read and 2 for bad arguments.
 */
@Command(name = "verify", mixinStandardHelpOptions = true, versionProvider = LeaseholdCli.Version.class,
        description = {"Prove a store's logs from the stored bytes and published keys alone: witness signatures and "
            + "Merkle paths, each message inside the leases it carries and near its signed time, generations and "
            + "grant chains per name, no write above a released lease's watermark, invariants 1-6.",
            "Prints each problem with its log, bucket, file and offset, then a summary."},
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {"0:clean: every check passed", "1:runtime failure (store or keys unreadable)",
            "2:bad arguments", "3:errors found: the log is not proven", "4:warnings only (for example leases "
                + "without witnesses)"})
final class VerifyCommand implements Callable<Integer> {
    /** Exit code: errors were found. */
    static final int ERRORS = 3;
    /** Exit code: warnings but no errors. */
    static final int WARNINGS = 4;

    private final CliContext context;

    @Spec
    private CommandLine.Model.CommandSpec spec;

    @Option(names = "--store", required = true, paramLabel = "DIR",
            description = "The bag store's root directory (the store's 'root').")
    private Path store;

    @Option(names = "--log", paramLabel = "NAME",
            description = "A log to verify; repeat for several (names are followed across them). Default: every log.")
    private List<String> logs = new ArrayList<>();

    @Option(names = "--keys", paramLabel = "DIR",
            description = "The published keys (default: the store's .leasehold/keys).")
    private Path keys;

    @Option(names = "--time-bound", paramLabel = "DURATION", converter = LogCompactCommand.DurationConverter.class,
            description = "The largest difference between a message's timestamp and the signed time it carries "
                    + "(default: 1s, the store's bound).")
    private Duration timeBound = Duration.ofSeconds(1);

    @Option(names = "--require-witnesses",
            description = "A lease without a witness is an error (default: a warning, for logs written before "
                    + "witnesses).")
    private boolean requireWitnesses;

    @Option(names = "--json", description = "JSON lines: one object per problem, then the summary (docs/CLI.md).")
    private boolean json;

    VerifyCommand(CliContext context) {
        this.context = context;
    }

    @Override
    public Integer call() throws Exception {
        if (!Files.isDirectory(store)) {
            throw new CliFailure("the store root " + store + " is not a directory: give the store's 'root'");
        }
        List<String> names = logs.isEmpty() ? allLogs() : logs;
        for (String l : names) {
            if (!Files.isDirectory(store.resolve(l))) {
                throw new ParameterException(spec.commandLine(), "--log: the store has no log '" + l
                        + "' ('leasehold log list --store DIR' shows the logs)");
            }
        }
        Path keyDir = keys != null ? keys : store.resolve(".leasehold").resolve("keys");
        KeySet keySet;
        try {
            keySet = PublishedKeys.load(new NfsSafeFiles(), keyDir);
        } catch (IOException | AuditFormatException e) {
            throw new CliFailure("the published keys cannot be read: " + e.getMessage()
                    + "; fix or remove the file, or give --keys");
        }
        Instant started = context.time().now();
        BarProgress bar = new BarProgress();
        LogVerifier v = new LogVerifier(new LogVerifier.Options(keySet, Micros.of(timeBound), requireWitnesses),
                this::print, bar);
        try {
            for (String l : names) {
                v.verifyLog(store, l);
                bar.close();
            }
            v.finish();
        } catch (IOException e) {
            throw new CliFailure("the store could not be read: " + e.getMessage(), e);
        } finally {
            bar.close();
        }
        Duration took = Duration.between(started, context.time().now());
        long errors = v.count(Counter.ERRORS);
        long warnings = v.count(Counter.WARNINGS);
        String verdict = errors > 0 ? "NOT PROVEN" : warnings > 0 ? "PROVEN WITH WARNINGS" : "PROVEN";
        if (json) {
            ObjectNode n = Json.MAPPER.createObjectNode();
            n.put("type", "summary");
            n.put("verdict", verdict.replace(' ', '_'));
            n.put("logs", v.count(Counter.LOGS));
            n.put("keys", keySet.keys().size());
            n.put("buckets", v.count(Counter.BUCKETS));
            n.put("frames", v.count(Counter.FRAMES));
            n.put("messages", v.count(Counter.MESSAGES));
            n.put("stamps", v.count(Counter.STAMPS));
            n.put("witnesses", v.count(Counter.WITNESSES));
            n.put("signatureChecks", v.signatureChecks());
            n.put("missingWitnesses", v.count(Counter.MISSING_WITNESSES));
            n.put("grants", v.grants());
            n.put("names", v.names());
            n.put("errors", errors);
            n.put("warnings", warnings);
            n.put("tookMicros", Micros.of(took));
            context.out().println(Json.line(n));
        } else {
            context.out().println(verdict + ": " + v.count(Counter.LOGS) + " logs, " + v.count(Counter.BUCKETS)
                    + " buckets, " + v.count(Counter.FRAMES) + " frames, " + v.count(Counter.MESSAGES) + " messages; "
                    + v.count(Counter.WITNESSES) + " witnesses (" + v.signatureChecks() + " signatures checked, "
                    + keySet.keys().size() + " published keys), " + v.count(Counter.MISSING_WITNESSES)
                    + " leases without a witness; " + v.grants() + " grants on " + v.names() + " names; " + errors
                    + " errors, " + warnings + " warnings; took " + took.truncatedTo(ChronoUnit.MILLIS));
        }
        return errors > 0 ? ERRORS : warnings > 0 ? WARNINGS : 0;
    }

    private void print(Finding f) {
        if (json) {
            ObjectNode n = Json.MAPPER.createObjectNode();
            n.put("type", "finding");
            n.put("severity", f.severity().name());
            n.put("kind", f.kind().name());
            n.put("log", f.log());
            n.put("bucket", f.bucketInstant() == null ? null : f.bucketInstant().toString());
            if (f.bucket() != Long.MIN_VALUE) {
                n.put("bucketMicros", f.bucket());
            } else {
                n.putNull("bucketMicros");
            }
            n.put("file", f.file());
            if (f.offset() >= 0) {
                n.put("offset", f.offset());
            } else {
                n.putNull("offset");
            }
            n.put("name", f.name());
            n.put("message", f.message());
            context.out().println(Json.line(n));
        } else {
            context.out().println(f);
        }
    }

    /** Every log of the store: directories named as a log (a letter or digit first). */
    private List<String> allLogs() throws IOException {
        List<String> out = new ArrayList<>();
        try (DirectoryStream<Path> s = Files.newDirectoryStream(store)) {
            for (Path p : s) {
                String n = p.getFileName().toString();
                if (Character.isLetterOrDigit(n.charAt(0)) && Files.isDirectory(p)) {
                    out.add(n);
                }
            }
        }
        out.sort(null);
        return out;
    }

    /** A progress bar per log, counted in buckets. */
    private final class BarProgress implements LogVerifier.Progress, AutoCloseable {
        private Progress bar;

        @Override
        public void starting(String log, int buckets) {
            close();
            bar = Progress.open(context, "verifying " + log, buckets);
        }

        @Override
        public void bucket() {
            if (bar != null) {
                bar.advance(1);
            }
        }

        @Override
        public void close() {
            if (bar != null) {
                bar.close();
                bar = null;
            }
        }
    }
}
