package org.leasehold.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code leasehold leases}: the commands against a lease server. */
@Command(name = "leases", mixinStandardHelpOptions = true, versionProvider = LeaseholdCli.Version.class,
        description = "Ask a lease server about names.", subcommands = LeasesInspectCommand.class)
final class LeasesCommand implements Runnable {
    @Spec
    private CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        throw new ParameterException(spec.commandLine(), "Missing command: give inspect");
    }
}
