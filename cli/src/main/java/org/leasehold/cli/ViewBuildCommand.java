package org.leasehold.cli;

import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.concurrent.Callable;

import org.leasehold.bag.ViewDefinition;
import org.leasehold.store.BagStoreConfig;
import org.leasehold.store.FileBagStore;
import org.leasehold.store.LogGeometry;
import org.leasehold.store.StoreReader;
import org.leasehold.store.ViewSnapshotReport;
import org.leasehold.time.Micros;

import com.fasterxml.jackson.databind.node.ObjectNode;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code leasehold view build}: publishes a snapshot of an application's view of a log at the latest sealed boundary
 * with {@code FileBagStore.buildView}, then prints what was done. Idempotent and safe beside running writers, readers
 * and other builders (the first to link its snapshot publishes it, the others check they wrote the same bytes). It
 * seals the buckets before the boundary that are not sealed yet, so it takes a writer identity for the time it runs,
 * and never creates a log.
 */
@Command(name = "build", mixinStandardHelpOptions = true, versionProvider = LeaseholdCli.Version.class,
        description = {"Publish a snapshot of a view of a log (the application's --definition, loaded from "
            + "--classpath) at the latest sealed boundary at or before --through, and print what was done.",
            "The boundary is a bucket start whose previous bucket ended more than the log's grace plus clock error "
                + "ago; the buckets before it are sealed first. Idempotent, safe beside running writers, readers and "
                + "other builders."})
final class ViewBuildCommand implements Callable<Integer> {
    private final CliContext context;

    @Spec
    private CommandLine.Model.CommandSpec spec;

    @Mixin
    private LogCommand.StoreOption store;

    @Mixin
    private LogCommand.LogOption log;

    @Mixin
    private ViewCommand.DefinitionOption definition;

    @Option(names = "--through", paramLabel = "TIME", description = "Build at the latest sealed boundary at or before "
            + "this time (default: now). ISO-8601 instant, 'now', or an offset such as -1h.")
    private TimeArg through;

    @Option(names = "--json", description = "One JSON object: the summary (see docs/CLI.md for its fields).")
    private boolean json;

    ViewBuildCommand(CliContext context) {
        this.context = context;
    }

    @Override
    public Integer call() throws Exception {
        Instant now = context.time().now();
        long t = through == null ? Micros.of(now) : Micros.of(through.resolve(now));
        long boundary;
        try (StoreReader reader = store.open(context)) {
            LogGeometry g = reader.geometry(log.log);
            boundary = boundary(g, t, Micros.of(now));
            Instant first = reader.firstBucket(log.log);
            if (first == null || boundary <= Micros.of(first)) {
                throw new CliFailure(noBoundary(g, first, t));
            }
        }
        try (ViewCommand.DefinitionOption.Loaded loaded = definition.load(spec.commandLine())) {
            return build(loaded.definition(), boundary, now);
        }
    }

    private <S> int build(ViewDefinition<S> def, long boundary, Instant started) throws Exception {
        BagStoreConfig config = BagStoreConfig.builder(store.store).metronome(false).build();
        ViewSnapshotReport r;
        RangeProgress progress = new RangeProgress(total -> Progress.open(context, "building " + def.name(), total));
        try (FileBagStore writer = FileBagStore.open(config, context.time())) {
            r = writer.buildView(log.log, def, Micros.toInstant(boundary), progress);
        } catch (IllegalArgumentException e) {
            throw new CliFailure("view definition '" + definition.className + "' is not acceptable: " + e.getMessage());
        } finally {
            progress.close();
        }
        Duration took = Duration.between(started, context.time().now());
        boolean published = r.outcome() != ViewSnapshotReport.Outcome.DAMAGED;
        if (json) {
            ObjectNode n = Json.MAPPER.createObjectNode();
            n.put("log", r.log());
            n.put("view", r.view());
            n.put("version", def.version());
            n.put("boundary", r.boundary().toString());
            n.put("boundaryMicros", Micros.of(r.boundary()));
            n.put("file", r.file());
            n.put("outcome", r.outcome().name());
            n.put("published", published);
            n.put("messages", r.messages());
            n.put("bytes", r.bytes());
            n.put("tookMicros", Micros.of(took));
            context.out().println(Json.line(n));
        } else {
            context.out().println("built view '" + r.view() + "' of log '" + r.log() + "' at " + r.boundary() + ": "
                    + describe(r.outcome()) + ", snapshot " + r.file() + ", " + r.messages() + " messages folded, "
                    + r.bytes() + " bytes; took " + took.truncatedTo(ChronoUnit.MILLIS));
        }
        if (!published) {
            throw new CliFailure("snapshot " + r.file() + " of view '" + r.view() + "' of log '" + r.log() + "' was "
                    + "published by another builder and is damaged: readers pass over it to an older snapshot or a "
                    + "full fold; restore the store's copy from a replica, or build at a later --through");
        }
        return 0;
    }

    private static String describe(ViewSnapshotReport.Outcome o) {
        return switch (o) {
            case PUBLISHED -> "published";
            case IDENTICAL -> "already published by another builder with the same bytes";
            case DAMAGED -> "published by another builder, damaged";
            case ALREADY_PUBLISHED -> "already published";
        };
    }

    /** The latest sealed boundary at or before {@code through} that may be taken at {@code now}, as the store takes it. */
    static long boundary(LogGeometry g, long through, long now) {
        long latest = now - g.graceMicros() - g.errorMicros() - 1;
        return g.bucketOf(Math.max(LogGeometry.MIN_MICROS, Math.min(through, latest)));
    }

    private String noBoundary(LogGeometry g, Instant firstBucket, long through) {
        if (firstBucket == null) {
            return "log '" + log.log + "' has no sealed boundary yet: it has no bucket, so a view of it has nothing to "
                    + "fold; append to it first";
        }
        long first = Micros.of(firstBucket);
        long firstEnd = first + g.widthMicros();
        if (through < firstEnd) {
            return "log '" + log.log + "' has no sealed boundary at or before " + Micros.toInstant(through) + ": its "
                    + "first bucket starts at " + firstBucket + "; give a --through after " + Micros.toInstant(firstEnd);
        }
        return "log '" + log.log + "' has no sealed boundary yet: its first bucket ends at " + Micros.toInstant(firstEnd)
                + " and may be sealed only from " + Micros.toInstant(firstEnd + g.graceMicros() + g.errorMicros())
                + " (its end plus grace plus clock error); this clock reads " + context.time().now() + ". Nothing was "
                + "built: retry then";
    }
}
