package org.leasehold.cli;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

import org.leasehold.bag.SealReport;
import org.leasehold.store.BagStoreConfig;
import org.leasehold.store.FileBagStore;
import org.leasehold.store.LogGeometry;
import org.leasehold.store.LogSurvey;
import org.leasehold.store.StoreReader;
import org.leasehold.time.Micros;

import com.fasterxml.jackson.databind.node.ObjectNode;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code leasehold log seal}: seals every bucket of a log that intersects {@code [from, through)} with
 * {@code BagStore.sealThrough}, creating empty sealed buckets where none exist, then prints the report. Sealing is
 * idempotent and safe beside running writers and sealers; it takes a writer identity for the time it runs (the sealer
 * identity written into the lock files) and never creates a log.
 */
@Command(name = "seal", mixinStandardHelpOptions = true, versionProvider = LeaseholdCli.Version.class,
        description = {"Seal every bucket of a log from --from up to --through (exclusive), creating empty sealed "
            + "buckets where none exist, and print what was done.",
            "Idempotent, safe beside running writers and sealers. Every bucket must be due (its end plus the log's "
                + "grace has passed)."})
final class LogSealCommand implements Callable<Integer> {
    /** At most this many calls to sealThrough, so that the progress bar moves and a failure stops early. */
    private static final int STEPS = 100;

    private final CliContext context;

    @Spec
    private CommandLine.Model.CommandSpec spec;

    @Mixin
    private LogCommand.StoreOption store;

    @Mixin
    private LogCommand.LogOption log;

    @Option(names = "--through", required = true, paramLabel = "TIME",
            description = "Seal the buckets that start before this time. ISO-8601 instant, 'now', or an offset such "
                    + "as -10s.")
    private TimeArg through;

    @Option(names = "--from", paramLabel = "TIME", description = "Seal from the bucket holding this time (default: the "
            + "log's first bucket).")
    private TimeArg from;

    @Option(names = "--list", description = "Print one line per bucket: its start, path, outcome, files and bytes.")
    private boolean list;

    @Option(names = "--json", description = "One JSON object: the summary; with --list, one per bucket before it.")
    private boolean json;

    LogSealCommand(CliContext context) {
        this.context = context;
    }

    @Override
    public Integer call() throws Exception {
        Instant now = context.time().now();
        long end = Micros.of(through.resolve(now));
        LogGeometry g;
        long start;
        try (StoreReader reader = store.open(context)) {
            g = reader.geometry(log.log);
            if (from != null) {
                start = Micros.of(from.resolve(now));
            } else {
                LogSurvey s = reader.survey(log.log, LogGeometry.MIN_MICROS, end, Micros.of(now));
                start = s.firstBucket() == null ? end - 1 : Micros.of(s.firstBucket());
            }
        }
        if (end <= start) {
            throw new ParameterException(spec.commandLine(), "--through (" + Micros.toInstant(end) + ") is not after "
                    + "--from (" + Micros.toInstant(start) + "): nothing to seal");
        }
        long first = g.bucketOf(start);
        long last = g.bucketOf(end - 1);
        long buckets = (last - first) / g.widthMicros() + 1;
        if (Micros.of(now) < g.dueAt(last)) {
            throw new CliFailure("bucket " + LogGeometry.relativePath(last) + " of log '" + log.log + "' may be sealed "
                    + "only from " + Micros.toInstant(g.dueAt(last)) + " (its end plus grace); this clock reads "
                    + Micros.toInstant(Micros.of(now)) + ". Nothing was sealed: give an earlier --through, or retry then");
        }
        long step = Math.max(1, (buckets + STEPS - 1) / STEPS) * g.widthMicros();
        List<SealReport.BucketSeal> seals = new ArrayList<>();
        BagStoreConfig config = BagStoreConfig.builder(store.store).metronome(false).build();
        try (FileBagStore writer = FileBagStore.open(config, context.time());
                Progress progress = Progress.open(context, "sealing " + log.log, buckets)) {
            for (long a = first; a <= last; a += step) {
                long b = Math.min(a + step, last + g.widthMicros());
                SealReport r = writer.sealThrough(log.log, Micros.toInstant(a), Micros.toInstant(b));
                seals.addAll(r.buckets());
                progress.advance(r.buckets().size());
            }
        }
        int sealed = 0;
        int already = 0;
        int helped = 0;
        long files = 0;
        long bytes = 0;
        for (SealReport.BucketSeal s : seals) {
            switch (s.outcome()) {
                case SEALED -> sealed++;
                case ALREADY_SEALED -> already++;
                case HELPED -> helped++;
                default -> throw new IllegalStateException("unknown seal outcome " + s.outcome());
            }
            files += s.files();
            bytes += s.bytes();
            if (list) {
                if (json) {
                    ObjectNode n = Json.MAPPER.createObjectNode();
                    n.put("bucket", s.bucket().toString());
                    n.put("path", s.path());
                    n.put("outcome", s.outcome().name());
                    n.put("files", s.files());
                    n.put("bytes", s.bytes());
                    context.out().println(Json.line(n));
                } else {
                    context.out().println(s.bucket() + "\t" + s.path() + "\t" + s.outcome() + "\t" + s.files() + "\t"
                            + s.bytes());
                }
            }
        }
        Instant fromInstant = Micros.toInstant(first);
        Instant toInstant = Micros.toInstant(last + g.widthMicros());
        if (json) {
            ObjectNode n = Json.MAPPER.createObjectNode();
            n.put("log", log.log);
            n.put("from", fromInstant.toString());
            n.put("through", toInstant.toString());
            n.put("buckets", seals.size());
            n.put("sealed", sealed);
            n.put("alreadySealed", already);
            n.put("helped", helped);
            n.put("files", files);
            n.put("bytes", bytes);
            context.out().println(Json.line(n));
        } else {
            context.out().println("sealed log '" + log.log + "' from " + fromInstant + " through " + toInstant + ": "
                    + seals.size() + " buckets (" + sealed + " sealed now, " + already + " already sealed, " + helped
                    + " helped), " + files + " data files, " + bytes + " bytes");
        }
        return 0;
    }
}
