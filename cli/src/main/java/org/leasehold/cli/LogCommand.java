package org.leasehold.cli;

import java.nio.file.Path;

import org.leasehold.bag.BagStoreException;
import org.leasehold.store.StoreReader;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code leasehold log}: the commands on a bag store's logs. */
@Command(name = "log", mixinStandardHelpOptions = true, versionProvider = LeaseholdCli.Version.class,
        description = "Read, survey, seal and compact the logs of a bag store.",
        subcommands = {LogListCommand.class, LogStatsCommand.class, LogCatCommand.class, LogTailCommand.class,
            LogSealCommand.class, LogCompactCommand.class})
final class LogCommand implements Runnable {
    @Spec
    private CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        throw new ParameterException(spec.commandLine(),
                "Missing command: give one of list, stats, cat, tail, seal, compact");
    }

    /** {@code --store DIR}: the store's root directory. */
    static final class StoreOption {
        @Option(names = "--store", required = true, paramLabel = "DIR",
                description = "The bag store's root directory (the store's 'root').")
        Path store;

        /** Opens the store for reading: no writer identity is taken and nothing is written. */
        StoreReader open(CliContext context) throws BagStoreException {
            return StoreReader.open(store, context.time());
        }
    }

    /** {@code --log NAME}. */
    static final class LogOption {
        @Option(names = "--log", required = true, paramLabel = "NAME", description = "The log.")
        String log;
    }
}
