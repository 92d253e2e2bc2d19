package org.leasehold.cli;

import java.util.concurrent.Callable;

import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadProblem;
import org.leasehold.store.StoreReader;

import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/** {@code leasehold log cat}: the messages of a log, in read order. */
@Command(name = "cat", mixinStandardHelpOptions = true, versionProvider = LeaseholdCli.Version.class,
        description = {"Print the messages of a log in the store's read order (timestamp, writer, file, offset, index), "
            + "one a line.",
            "Text lines are tab-separated: timestamp, sealed|tentative, writer, leases (name@generation,...), payload "
                + "(text, or base64:... when it is not printable UTF-8)."})
final class LogCatCommand implements Callable<Integer> {
    private final CliContext context;

    @Mixin
    private LogCommand.StoreOption store;

    @Mixin
    private LogCommand.LogOption log;

    @Mixin
    private ReadOptions read;

    LogCatCommand(CliContext context) {
        this.context = context;
    }

    @Override
    public Integer call() throws Exception {
        try (StoreReader reader = store.open(context);
                MessageStream s = reader.read(read.request(log.log, context.time().now()))) {
            Message m;
            long n = 0;
            while ((m = s.next()) != null) {
                context.out().println(MessageOutput.line(m, read.json));
                if (++n % 4096 == 0 && context.out().checkError()) {
                    // Standard output is gone (a pipe to 'head' closed): nobody reads the rest.
                    return 0;
                }
            }
            for (ReadProblem p : s.problems()) {
                context.err().println(MessageOutput.problem(p));
            }
        }
        return 0;
    }
}
