package org.leasehold.cli;

import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.concurrent.Callable;

import org.leasehold.config.Check;
import org.leasehold.store.BagStoreConfig;
import org.leasehold.store.CompactionReport;
import org.leasehold.store.FileBagStore;
import org.leasehold.store.LogGeometry;
import org.leasehold.store.StoreReader;
import org.leasehold.time.Micros;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code leasehold log compact}: merges the buckets of a log that ended more than a horizon ago into segment files
 * with {@code FileBagStore.compact}, then prints what was done. Idempotent and safe beside running writers, readers
 * and other compactors; nothing is deleted. It takes a writer identity for the time it runs (compaction runs in a
 * writing store, whose identity names its prepared files) and never creates a log.
 */
@Command(name = "compact", mixinStandardHelpOptions = true, versionProvider = LeaseholdCli.Version.class,
        description = {"Merge the buckets of a log that ended more than --horizon ago into segment files (one per "
            + "--segment-span), publish them, and print what was done.",
            "Idempotent, resumable, safe beside running writers, readers and other compactors; deletes nothing but "
                + "the prepared files of ranges already published."})
final class LogCompactCommand implements Callable<Integer> {
    private final CliContext context;

    @Spec
    private CommandLine.Model.CommandSpec spec;

    @Mixin
    private LogCommand.StoreOption store;

    @Mixin
    private LogCommand.LogOption log;

    @Option(names = "--horizon", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "Compact the buckets that ended at least this long ago; more than the log's grace plus "
                    + "clock error (default: 1h, the store's compactionHorizon). 500ms, 90s, 10m, 1h, 1d or PT1H.")
    private Duration horizon;

    @Option(names = "--segment-span", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "The time range of one segment; divides a day; give the store's segmentSpan (default: 1h).")
    private Duration segmentSpan;

    @Option(names = "--json", description = "One JSON object: the summary (see docs/CLI.md for its fields).")
    private boolean json;

    LogCompactCommand(CliContext context) {
        this.context = context;
    }

    @Override
    public Integer call() throws Exception {
        BagStoreConfig config;
        try {
            BagStoreConfig.Builder b = BagStoreConfig.builder(store.store).metronome(false);
            if (segmentSpan != null) {
                b.segmentSpan(segmentSpan);
            }
            config = b.build();
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), "--segment-span: " + e.getMessage());
        }
        Duration h = horizon == null ? config.compactionHorizon() : horizon;
        try (StoreReader reader = store.open(context)) {
            LogGeometry g = reader.geometry(log.log);
            Duration min = Duration.ofNanos((g.graceMicros() + g.errorMicros()) * 1_000L);
            if (h.compareTo(min) <= 0) {
                throw new ParameterException(spec.commandLine(), "--horizon " + h + " is not longer than the grace plus "
                        + "clock error of log '" + log.log + "' (" + min + "): younger buckets may still be written "
                        + "to or sealed; give a longer --horizon");
            }
        }
        Instant started = context.time().now();
        CompactionReport r;
        RangeProgress progress = new RangeProgress(total -> Progress.open(context, "compacting " + log.log, total,
                "spans"));
        try (FileBagStore writer = FileBagStore.open(config, context.time())) {
            r = writer.compact(log.log, h, progress);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), "--horizon: " + e.getMessage());
        } finally {
            progress.close();
        }
        Duration took = Duration.between(started, context.time().now());
        Instant through = progress.limit == Long.MIN_VALUE ? null : Micros.toInstant(progress.limit);
        if (json) {
            ObjectNode n = Json.MAPPER.createObjectNode();
            n.put("log", r.log());
            n.put("horizonMicros", Micros.of(h));
            n.put("segmentSpanMicros", progress.step);
            n.put("through", through == null ? null : through.toString());
            n.put("published", r.published().size());
            ArrayNode names = n.putArray("publishedSegments");
            r.published().forEach(names::add);
            n.put("lost", r.lost().size());
            n.put("alreadyPublished", r.alreadyThere());
            n.put("buckets", r.buckets());
            n.put("frames", r.frames());
            n.put("bytes", r.bytes());
            n.put("preparedRemoved", r.preparedRemoved());
            n.put("tookMicros", Micros.of(took));
            context.out().println(Json.line(n));
        } else {
            context.out().println("compacted log '" + r.log() + "' through " + (through == null ? "-" : through)
                    + " (horizon " + h + ", segments of " + Duration.ofNanos(progress.step * 1_000L) + "): "
                    + r.published().size() + " segments published, " + r.lost().size() + " lost to another compactor, "
                    + r.alreadyThere() + " already published; " + r.buckets() + " buckets, " + r.frames() + " frames, "
                    + r.bytes() + " bytes written; " + r.preparedRemoved() + " prepared files removed; took "
                    + took.truncatedTo(ChronoUnit.MILLIS));
        }
        return 0;
    }

    /** A duration as {@link Check#duration} reads it; a bad one is a usage error naming the accepted forms. */
    static final class DurationConverter implements CommandLine.ITypeConverter<Duration> {
        @Override
        public Duration convert(String value) {
            Duration d;
            try {
                d = Check.duration("duration", value);
            } catch (IllegalArgumentException e) {
                throw new CommandLine.TypeConversionException("'" + value + "' is not a duration: give 500ms, 90s, "
                        + "10m, 1h, 1d or ISO-8601 such as PT1H");
            }
            if (d.isNegative() || d.isZero()) {
                throw new CommandLine.TypeConversionException("'" + value + "' is not a positive duration");
            }
            return d;
        }
    }
}
