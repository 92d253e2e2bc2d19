package org.leasehold.cli;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.Callable;

import org.leasehold.store.LogGeometry;
import org.leasehold.store.LogSurvey;
import org.leasehold.store.SegmentSurvey;
import org.leasehold.store.StoreReader;
import org.leasehold.store.ViewSurvey;
import org.leasehold.time.Micros;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code leasehold log stats}: what is on disk for one log, and how far sealing lags. */
@Command(name = "stats", mixinStandardHelpOptions = true, versionProvider = LeaseholdCli.Version.class,
        description = {"Survey one log: its buckets (sealed, unsealed, due), data files and bytes, its first and last "
            + "bucket, the seal lag (now minus the end of the newest sealed bucket), the log's segments and its views' "
            + "snapshots.",
            "Lists every bucket directory in the range and sizes every data file and segment; reads no message. "
                + "Segments are counted over the whole log, whatever --from and --to."})
final class LogStatsCommand implements Callable<Integer> {
    private final CliContext context;

    @Mixin
    private LogCommand.StoreOption store;

    @Mixin
    private LogCommand.LogOption log;

    @Option(names = "--from", paramLabel = "TIME", description = "Only buckets ending after this time (default: the "
            + "log's beginning). ISO-8601 instant, 'now', or an offset such as -10m.")
    private TimeArg from;

    @Option(names = "--to", paramLabel = "TIME", description = "Only buckets starting before this time (default: no "
            + "end).")
    private TimeArg to;

    @Option(names = "--json", description = "One JSON object (see docs/CLI.md for its fields).")
    private boolean json;

    LogStatsCommand(CliContext context) {
        this.context = context;
    }

    @Override
    public Integer call() throws Exception {
        Instant now = context.time().now();
        long f = from == null ? LogGeometry.MIN_MICROS : Micros.of(from.resolve(now));
        long t = to == null ? LogGeometry.MAX_MICROS : Micros.of(to.resolve(now));
        LogSurvey s;
        SegmentSurvey seg;
        ViewSurvey views;
        try (StoreReader reader = store.open(context)) {
            s = reader.survey(log.log, f, t, Micros.of(now));
            seg = reader.segments(log.log);
            views = reader.views(log.log);
        }
        if (json) {
            ObjectNode n = toJson(s);
            putSegments(n, seg);
            putViews(n, views);
            context.out().println(Json.line(n));
            return 0;
        }
        LogGeometry g = s.geometry();
        row("log", s.log());
        row("bucket width", Duration.ofNanos(g.widthMicros() * 1_000L));
        row("grace", Duration.ofNanos(g.graceMicros() * 1_000L));
        row("max clock error", Duration.ofNanos(g.errorMicros() * 1_000L));
        row("buckets", s.buckets() + " (" + s.sealedBuckets() + " sealed, " + s.unsealedBuckets() + " unsealed, of which "
                + s.dueUnsealed() + " due)");
        row("data files", s.dataFiles());
        row("bytes", s.bytes() + " (" + s.sealedBytes() + " sealed, " + s.unsealedBytes() + " unsealed, "
                + s.refusedBytes() + " refused)");
        row("first bucket", orNone(s.firstBucket()));
        row("last bucket", orNone(s.lastBucket()));
        row("newest sealed end", orNone(s.newestSealedEnd()));
        row("oldest unsealed", orNone(s.oldestUnsealed()));
        row("seal lag", s.sealLag() == null ? "-" : s.sealLag());
        row("segments", seg.segments() == 0 ? "0" : seg.segments() + " (" + seg.first() + " to " + seg.last() + ", "
                + Duration.ofNanos(seg.coveredMicros() * 1_000L) + " covered), " + seg.bytes() + " bytes");
        row("prepared segments", seg.prepared());
        row("views", views.views().size());
        for (ViewSurvey.View v : views.views()) {
            row("view " + v.view(), v.snapshots() + " snapshots (" + v.versions() + " versions), latest "
                    + orNone(v.latestBoundary()) + ", " + v.bytes() + " bytes, " + v.prepared() + " prepared");
        }
        row("surveyed at", s.surveyedAt());
        return 0;
    }

    private void row(String key, Object value) {
        context.out().printf("%-18s %s%n", key, value);
    }

    private static Object orNone(Instant i) {
        return i == null ? "-" : i;
    }

    static ObjectNode toJson(LogSurvey s) {
        ObjectNode n = Json.MAPPER.createObjectNode();
        n.put("log", s.log());
        n.put("bucketWidthMicros", s.geometry().widthMicros());
        n.put("graceMicros", s.geometry().graceMicros());
        n.put("maxClockErrorMicros", s.geometry().errorMicros());
        n.put("surveyedAt", s.surveyedAt().toString());
        n.put("buckets", s.buckets());
        n.put("sealedBuckets", s.sealedBuckets());
        n.put("unsealedBuckets", s.unsealedBuckets());
        n.put("dueUnsealedBuckets", s.dueUnsealed());
        n.put("dataFiles", s.dataFiles());
        n.put("bytes", s.bytes());
        n.put("sealedBytes", s.sealedBytes());
        n.put("unsealedBytes", s.unsealedBytes());
        n.put("refusedBytes", s.refusedBytes());
        n.put("firstBucket", text(s.firstBucket()));
        n.put("lastBucket", text(s.lastBucket()));
        n.put("newestSealedEnd", text(s.newestSealedEnd()));
        n.put("oldestUnsealed", text(s.oldestUnsealed()));
        if (s.sealLag() == null) {
            n.putNull("sealLagMicros");
        } else {
            n.put("sealLagMicros", Micros.of(s.sealLag()));
        }
        return n;
    }

    /** The fields of a segment survey, added to a stats object. */
    static void putSegments(ObjectNode n, SegmentSurvey seg) {
        n.put("segments", seg.segments());
        n.put("segmentsFrom", text(seg.first()));
        n.put("segmentsTo", text(seg.last()));
        n.put("segmentsCoveredMicros", seg.coveredMicros());
        n.put("segmentBytes", seg.bytes());
        n.put("preparedSegments", seg.prepared());
    }

    /** The views of a view survey, added to a stats object. */
    static void putViews(ObjectNode n, ViewSurvey views) {
        ArrayNode a = n.putArray("views");
        for (ViewSurvey.View v : views.views()) {
            ObjectNode o = a.addObject();
            o.put("view", v.view());
            o.put("snapshots", v.snapshots());
            o.put("versions", v.versions());
            o.put("latestBoundary", text(v.latestBoundary()));
            o.put("latestFile", v.latestFile());
            o.put("bytes", v.bytes());
            o.put("preparedSnapshots", v.prepared());
        }
    }

    private static String text(Instant i) {
        return i == null ? null : i.toString();
    }
}
