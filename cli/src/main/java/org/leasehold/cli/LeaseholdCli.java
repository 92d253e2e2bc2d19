package org.leasehold.cli;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.Properties;
import java.util.logging.Level;
import java.util.logging.Logger;

import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.UnknownLogException;
import org.leasehold.bag.UnreadableRecordException;
import org.leasehold.remote.RemoteCallFailedException;
import org.leasehold.time.SystemTimeSource;
import org.leasehold.time.TimeSource;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ScopeType;
import picocli.CommandLine.Spec;

/**
 * The {@code leasehold} command: reads, surveys, seals and compacts the logs of a bag store, builds and shows its
 * materialized views, and shows what a lease server knows of names. Exit codes: 0 done, 1 a runtime failure (one line
 * on standard error saying what and what to do; the stack trace only with {@code --verbose}), 2 bad arguments (one
 * line and a hint to {@code --help}).
 */
@Command(name = "leasehold", mixinStandardHelpOptions = true, versionProvider = LeaseholdCli.Version.class,
        description = "Inspect, seal, compact and verify the logs of a Leasehold bag store, build its views, "
            + "manage its signing keys; inspect names on a lease server.",
        subcommands = {LogCommand.class, ViewCommand.class, LeasesCommand.class, VerifyCommand.class, KeysCommand.class,
            CommandLine.HelpCommand.class},
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {"0:done", "1:runtime failure (store unreadable, server unreachable, ...)", "2:bad arguments"})
public final class LeaseholdCli implements Runnable {
    private final CliContext context;

    @Spec
    private CommandLine.Model.CommandSpec spec;

    LeaseholdCli(CliContext context) {
        this.context = context;
    }

    @Option(names = "--verbose", scope = ScopeType.INHERIT,
            description = "Log what the libraries log, and print the stack trace of a failure.")
    void verbose(boolean v) {
        context.verbose(v);
    }

    @Option(names = {"-q", "--quiet"}, scope = ScopeType.INHERIT, description = "No progress bar.")
    void quiet(boolean v) {
        context.quiet(v);
    }

    @Override
    public void run() {
        throw new ParameterException(spec.commandLine(), "Missing command: give one of log, view, leases, verify");
    }

    /** Runs {@code args} on the real clock with the process's streams and exits with the command's code. */
    public static void main(String[] args) {
        int code;
        try (SystemTimeSource time = new SystemTimeSource("leasehold-cli-timer")) {
            // Buffered: a read of a long log prints one line a message; commands that wait (tail -f) flush.
            PrintWriter out = new PrintWriter(new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8),
                    1 << 16));
            PrintWriter err = new PrintWriter(System.err, true, StandardCharsets.UTF_8);
            code = execute(time, out, err, System.console() != null, args);
        }
        System.exit(code);
    }

    /**
     * Runs one command line and returns its exit code; output goes to {@code out} and {@code err}, which are
     * flushed before it returns.
     *
     * @param errIsTerminal whether {@code err} is a terminal (progress bars are drawn only there)
     */
    static int execute(TimeSource time, PrintWriter out, PrintWriter err, boolean errIsTerminal, String... args) {
        CliContext context = new CliContext(time, out, err, errIsTerminal);
        Logger root = Logger.getLogger("");
        Level before = root.getLevel();
        try {
            CommandLine cl = commandLine(context);
            boolean verbose = false;
            for (String a : args) {
                verbose |= a.equals("--verbose");
            }
            root.setLevel(verbose ? Level.INFO : Level.OFF);
            return cl.execute(args);
        } finally {
            root.setLevel(before);
            out.flush();
            err.flush();
        }
    }

    static CommandLine commandLine(CliContext context) {
        CommandLine cl = new CommandLine(new LeaseholdCli(context), new Factory(context));
        cl.setOut(context.out());
        cl.setErr(context.err());
        cl.registerConverter(TimeArg.class, new TimeArg.Converter());
        cl.setParameterExceptionHandler(LeaseholdCli::usageError);
        cl.setExecutionExceptionHandler((e, line, parsed) -> failure(context, e));
        return cl;
    }

    /** A usage error: the message and where to read more, exit 2. */
    private static int usageError(ParameterException e, String[] args) {
        CommandLine cl = e.getCommandLine();
        PrintWriter err = cl.getErr();
        err.println("leasehold: " + e.getMessage());
        CommandLine.UnmatchedArgumentException.printSuggestions(e, err);
        err.println("Try '" + cl.getCommandSpec().qualifiedName() + " --help' for more information.");
        return cl.getCommandSpec().exitCodeOnInvalidInput();
    }

    /** A runtime failure: one line saying what and what to do (and the stack trace with --verbose), exit 1. */
    static int failure(CliContext context, Exception e) {
        PrintWriter err = context.err();
        err.println("leasehold: " + describe(e));
        if (context.verbose()) {
            StringWriter trace = new StringWriter();
            e.printStackTrace(new PrintWriter(trace));
            err.print(trace);
        }
        return 1;
    }

    private static String describe(Throwable e) {
        if (e instanceof UnknownLogException u) {
            return u.getMessage() + " ('leasehold log list --store DIR' shows the logs)";
        }
        if (e instanceof UnreadableRecordException u) {
            return u.getMessage() + " (with this command: --skip-unreadable)";
        }
        if (e instanceof BagStoreException || e instanceof CliFailure) {
            return e.getMessage();
        }
        if (e instanceof RemoteCallFailedException) {
            return e.getMessage();
        }
        return "unexpected failure: " + e + " (run with --verbose for the stack trace)";
    }

    /** Creates the commands with the run's context. */
    private static final class Factory implements CommandLine.IFactory {
        private final CliContext context;
        private final CommandLine.IFactory fallback = CommandLine.defaultFactory();

        Factory(CliContext context) {
            this.context = context;
        }

        @Override
        public <K> K create(Class<K> cls) throws Exception {
            try {
                return cls.getDeclaredConstructor(CliContext.class).newInstance(context);
            } catch (NoSuchMethodException e) {
                return fallback.create(cls);
            }
        }
    }

    /** The version, from the build. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() throws IOException {
            Properties p = new Properties();
            try (InputStream in = LeaseholdCli.class.getResourceAsStream("version.properties")) {
                if (in != null) {
                    p.load(in);
                }
            }
            return new String[] {"leasehold " + p.getProperty("version", "(unknown version)"),
                "Java " + System.getProperty("java.version") + " (" + System.getProperty("java.vendor") + ")"};
        }
    }
}
