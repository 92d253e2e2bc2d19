package org.leasehold.cli;

import java.io.File;
import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Modifier;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.leasehold.bag.ViewDefinition;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code leasehold view}: the commands on the materialized views of a log. */
@Command(name = "view", mixinStandardHelpOptions = true, versionProvider = LeaseholdCli.Version.class,
        description = "Build and show the materialized views of a log, with the application's view definition.",
        subcommands = {ViewBuildCommand.class, ViewShowCommand.class})
final class ViewCommand implements Runnable {
    @Spec
    private CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        throw new ParameterException(spec.commandLine(), "Missing command: give one of build, show");
    }

    /**
     * {@code --definition CLASS --classpath PATH}: the application's view definition, a class implementing
     * {@link ViewDefinition} with a public constructor without parameters, loaded from the given jars or directories
     * (the CLI's own classes, the store's API among them, come first).
     */
    static final class DefinitionOption {
        @Option(names = "--definition", required = true, paramLabel = "CLASS",
                description = "The fully qualified name of the view definition's class: it implements "
                        + "org.leasehold.bag.ViewDefinition and has a public constructor without parameters.")
        String className;

        @Option(names = {"--classpath", "-cp"}, paramLabel = "PATH",
                description = "The jars or class directories holding the definition and what it needs, separated by "
                        + "the platform's path separator (':' on Unix) or repeated.")
        List<String> classpath = new ArrayList<>();

        /** The entries of every {@code --classpath}, split at the path separator. */
        List<Path> entries() {
            List<Path> l = new ArrayList<>();
            for (String c : classpath) {
                for (String e : c.split(java.util.regex.Pattern.quote(File.pathSeparator))) {
                    if (!e.isEmpty()) {
                        l.add(Path.of(e));
                    }
                }
            }
            return l;
        }

        /** The loaded definition, with the class loader to close after the command. */
        record Loaded(ViewDefinition<?> definition, URLClassLoader loader) implements AutoCloseable {
            @Override
            public void close() throws IOException {
                loader.close();
            }
        }

        /**
         * Loads and creates the definition. A path that does not exist, a class that cannot be found or linked, or a
         * class that is not a view definition is a usage error; a constructor that throws is a runtime failure.
         */
        Loaded load(CommandLine cl) {
            List<URL> urls = new ArrayList<>();
            for (Path p : entries()) {
                if (!Files.exists(p)) {
                    throw new ParameterException(cl, "--classpath: " + p + " does not exist: give the jars (or class "
                            + "directories) holding the view definition and what it needs");
                }
                try {
                    urls.add(p.toAbsolutePath().toUri().toURL());
                } catch (MalformedURLException e) {
                    throw new ParameterException(cl, "--classpath: " + p + " cannot be used as a class path entry: "
                            + e.getMessage());
                }
            }
            URLClassLoader loader = new URLClassLoader("view-definition", urls.toArray(URL[]::new),
                    ViewCommand.class.getClassLoader());
            try {
                return new Loaded(create(cl, loader), loader);
            } catch (RuntimeException e) {
                try {
                    loader.close();
                } catch (IOException ignored) {
                    // Closing a loader that read jars: nothing to lose.
                }
                throw e;
            }
        }

        private ViewDefinition<?> create(CommandLine cl, ClassLoader loader) {
            String where = classpath.isEmpty() ? "the CLI's class path (no --classpath given)"
                    : "--classpath " + String.join(File.pathSeparator, classpath);
            Class<?> c;
            try {
                c = Class.forName(className, false, loader);
            } catch (ClassNotFoundException e) {
                throw new ParameterException(cl, "--definition: class '" + className + "' is not on " + where
                        + ": give the fully qualified name of the view definition's class and the jars that hold it");
            } catch (LinkageError e) {
                throw new ParameterException(cl, "--definition: class '" + className + "' cannot be loaded from " + where
                        + " (" + e + "): add the jars it needs to --classpath");
            }
            if (!ViewDefinition.class.isAssignableFrom(c) || c.isInterface() || Modifier.isAbstract(c.getModifiers())) {
                throw new ParameterException(cl, "--definition: class '" + className + "' is not a view definition: it "
                        + "must be a concrete class implementing " + ViewDefinition.class.getName());
            }
            Constructor<?> k;
            try {
                k = c.getConstructor();
            } catch (NoSuchMethodException e) {
                throw new ParameterException(cl, "--definition: class '" + className + "' has no public constructor "
                        + "without parameters: add one (the CLI creates the definition with it)");
            } catch (LinkageError e) {
                throw new ParameterException(cl, "--definition: class '" + className + "' cannot be loaded from " + where
                        + " (" + e + "): add the jars it needs to --classpath");
            }
            try {
                return (ViewDefinition<?>) k.newInstance();
            } catch (InvocationTargetException e) {
                throw new CliFailure("creating view definition '" + className + "' failed: its constructor threw "
                        + e.getCause() + "; fix the definition (run with --verbose for the stack trace)", e.getCause());
            } catch (ReflectiveOperationException | LinkageError e) {
                throw new ParameterException(cl, "--definition: class '" + className + "' cannot be created (" + e
                        + "): make it a public class with a public constructor without parameters");
            }
        }
    }
}
