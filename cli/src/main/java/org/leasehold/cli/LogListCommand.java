package org.leasehold.cli;

import java.util.concurrent.Callable;

import org.leasehold.store.StoreReader;

import com.fasterxml.jackson.databind.node.ObjectNode;

import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code leasehold log list}: the logs of a store, one a line, sorted. */
@Command(name = "list", mixinStandardHelpOptions = true, versionProvider = LeaseholdCli.Version.class,
        description = "List the logs of a store, one a line, sorted by name.")
final class LogListCommand implements Callable<Integer> {
    private final CliContext context;

    @Mixin
    private LogCommand.StoreOption store;

    @Option(names = "--json", description = "One JSON object a line: {\"log\": NAME}.")
    private boolean json;

    LogListCommand(CliContext context) {
        this.context = context;
    }

    @Override
    public Integer call() throws Exception {
        try (StoreReader reader = store.open(context)) {
            for (String log : reader.logs()) {
                if (json) {
                    ObjectNode n = Json.MAPPER.createObjectNode();
                    n.put("log", log);
                    context.out().println(Json.line(n));
                } else {
                    context.out().println(log);
                }
            }
        }
        return 0;
    }
}
