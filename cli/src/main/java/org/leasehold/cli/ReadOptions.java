package org.leasehold.cli;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import org.leasehold.bag.ReadRequest;

import picocli.CommandLine.Option;

/** The options of {@code log cat} and {@code log tail}: range, names, output form. */
final class ReadOptions {
    @Option(names = "--from", paramLabel = "TIME", description = "First timestamp included (default: the log's "
            + "beginning). ISO-8601 instant, 'now', or an offset such as -10m.")
    TimeArg from;

    @Option(names = "--to", paramLabel = "TIME", description = "First timestamp excluded (default: no end).")
    TimeArg to;

    @Option(names = "--name", paramLabel = "LEASE-NAME", description = "Only messages written under this lease name "
            + "(repeat for any of several).")
    List<String> names = new ArrayList<>();

    @Option(names = "--json", description = "One JSON object a message (see docs/CLI.md for the fields).")
    boolean json;

    @Option(names = "--sealed-only", description = "Only messages of sealed buckets (final); without it, messages of "
            + "unsealed buckets are shown too, marked tentative.")
    boolean sealedOnly;

    @Option(names = "--skip-unreadable", description = "Skip corrupt records and unknown format versions, reporting "
            + "them on standard error, instead of failing.")
    boolean skipUnreadable;

    /** The read these options ask for, with relative times resolved against {@code now}. */
    ReadRequest request(String log, Instant now) {
        return new ReadRequest(log, from == null ? null : from.resolve(now), to == null ? null : to.resolve(now),
                Set.copyOf(names), skipUnreadable, !sealedOnly);
    }
}
