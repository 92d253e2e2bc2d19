package org.leasehold.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.Callable;

import org.leasehold.audit.AuditFormatException;
import org.leasehold.audit.KeyFiles;
import org.leasehold.audit.KeyId;
import org.leasehold.audit.KeySet;
import org.leasehold.audit.PublishedKey;
import org.leasehold.audit.PublishedKeys;
import org.leasehold.audit.SigningKey;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.store.Names;
import org.leasehold.time.Micros;

import com.fasterxml.jackson.databind.node.ObjectNode;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code leasehold keys}: the signing keys published in a bag store ({@code .leasehold/keys/}, FORMAT.md "Published
 * keys"): list them, rotate the key of an adapter's embedded engine or of a lease server, revoke a key from an instant
 * on. Every file is
 * written with the store's NFS-safe operations (prepared, forced, linked) and never changed.
 */
@Command(name = "keys", mixinStandardHelpOptions = true, versionProvider = LeaseholdCli.Version.class,
        description = "List, rotate and revoke the signing keys published in a bag store.",
        subcommands = {KeysCommand.ListKeys.class, KeysCommand.Rotate.class, KeysCommand.RotateServer.class,
            KeysCommand.Revoke.class})
final class KeysCommand implements Runnable {
    /** The identity in the names of the prepared files this tool writes. */
    static final String WRITER = "leasehold-cli";

    @Spec
    private CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        throw new ParameterException(spec.commandLine(),
                "Missing command: give one of list, rotate, rotate-server, revoke");
    }

    static KeySet load(Path store) {
        try {
            return PublishedKeys.load(new NfsSafeFiles(), PublishedKeys.directory(store));
        } catch (IOException | AuditFormatException e) {
            throw new CliFailure("the published keys of " + store + " cannot be read: " + e.getMessage()
                    + "; fix or remove the file");
        }
    }

    private static String micros(long m) {
        return m == Long.MAX_VALUE ? "open" : Micros.toInstant(m).toString();
    }

    /** {@code leasehold keys list}. */
    @Command(name = "list", mixinStandardHelpOptions = true, versionProvider = LeaseholdCli.Version.class,
            description = "Print the published keys: id, service, valid from, valid until, revoked from.")
    static final class ListKeys implements Callable<Integer> {
        private final CliContext context;

        @Mixin
        private LogCommand.StoreOption store;

        @Option(names = "--json", description = "One JSON object per key.")
        private boolean json;

        ListKeys(CliContext context) {
            this.context = context;
        }

        @Override
        public Integer call() {
            List<PublishedKey> keys = new ArrayList<>(load(store.store).keys());
            keys.sort(Comparator.comparing(PublishedKey::serviceId).thenComparingLong(PublishedKey::validFrom)
                    .thenComparing(k -> k.id().toString()));
            for (PublishedKey k : keys) {
                String revoked = k.revokedAt() == Long.MAX_VALUE ? null : micros(k.revokedAt());
                if (json) {
                    ObjectNode n = Json.MAPPER.createObjectNode();
                    n.put("keyId", k.id().toString());
                    n.put("service", k.serviceId());
                    n.put("validFrom", micros(k.validFrom()));
                    n.put("validUntil", micros(k.validUntil()));
                    if (revoked == null) {
                        n.putNull("revokedAt");
                    } else {
                        n.put("revokedAt", revoked);
                    }
                    context.out().println(Json.line(n));
                } else {
                    context.out().println(k.id() + "\t" + k.serviceId() + "\t" + micros(k.validFrom()) + "\t"
                            + micros(k.validUntil()) + "\t" + (revoked == null ? "-" : "revoked " + revoked));
                }
            }
            return 0;
        }
    }

    /** {@code leasehold keys rotate}. */
    @Command(name = "rotate", mixinStandardHelpOptions = true, versionProvider = LeaseholdCli.Version.class,
            description = {"Rotate the signing key of the embedded engine of an adapter (log and writer): link its next "
                + "key file under .leasehold/signing/<log>/<writer>/ and publish its public key, valid from now.",
                "The running adapter signs with it within 10 s, without a restart; the old key stays published and "
                    + "valid (revoke it with 'leasehold keys revoke' if it must stop). An adapter with a "
                    + "SigningKeyFile is rotated by configuring a new file and restarting."})
    static final class Rotate implements Callable<Integer> {
        private final CliContext context;

        @Spec
        private CommandLine.Model.CommandSpec spec;

        @Mixin
        private LogCommand.StoreOption store;

        @Mixin
        private LogCommand.LogOption log;

        @Option(names = "--writer", required = true, paramLabel = "ID",
                description = "The adapter's writer identity (its WriterId).")
        private String writer;

        @Option(names = "--json", description = "One JSON object: the new key.")
        private boolean json;

        Rotate(CliContext context) {
            this.context = context;
        }

        @Override
        public Integer call() {
            String problem = Names.writerIdProblem(writer);
            if (problem != null) {
                throw new ParameterException(spec.commandLine(), "--writer '" + writer + "' " + problem);
            }
            problem = Names.logNameProblem(log.log);
            if (problem != null) {
                throw new ParameterException(spec.commandLine(), "--log '" + log.log + "' " + problem);
            }
            Path dir = store.store.resolve(".leasehold").resolve("signing").resolve(log.log).resolve(writer);
            if (!Files.isDirectory(dir)) {
                throw new CliFailure("no generated signing keys of writer '" + writer + "' for log '" + log.log
                        + "' under " + dir.getParent() + ": its adapter has not run there in embedded mode, or it "
                        + "signs with a SigningKeyFile (rotate that by configuring a new file and restarting)");
            }
            String service = "embedded/" + writer + "/" + log.log;
            long now = context.time().nowMicros();
            try {
                SigningKey next = new KeyFiles(new NfsSafeFiles(), dir, WRITER, new SecureRandom()).next();
                new PublishedKeys(new NfsSafeFiles(), store.store, WRITER).publish(new PublishedKey(next.publicKey(),
                        service, now, Long.MAX_VALUE, Long.MAX_VALUE));
                if (json) {
                    ObjectNode n = Json.MAPPER.createObjectNode();
                    n.put("keyId", next.id().toString());
                    n.put("service", service);
                    n.put("validFrom", micros(now));
                    context.out().println(Json.line(n));
                } else {
                    context.out().println("key " + next.id() + " of service " + service + " linked and published, "
                            + "valid from " + micros(now) + "; the running adapter signs with it within 10 s");
                }
            } catch (IOException | AuditFormatException e) {
                throw new CliFailure("the signing key of " + service + " could not be rotated: " + e.getMessage()
                        + "; nothing the adapter uses was changed unless the key file was linked (then it is the "
                        + "current key: run 'leasehold keys list' to see whether it is published)", e);
            }
            return 0;
        }
    }

    /** {@code leasehold keys rotate-server}. */
    @Command(name = "rotate-server", mixinStandardHelpOptions = true, versionProvider = LeaseholdCli.Version.class,
            description = {"Rotate the signing key of a lease server that keeps its keys in its state directory: link "
                + "the next key file under <state-dir>/signing/.",
                "The running server adopts it within 10 s by its clock, without a restart: it serves the new public "
                    + "key (and publishes it with --publish-keys) before its first signature; the old key stays "
                    + "valid, and the service name in its witnesses stays the same. Run it as the server's user (the "
                    + "key file is readable by its owner only). A server started with --signing-key is rotated by "
                    + "restarting it with another file."})
    static final class RotateServer implements Callable<Integer> {
        private final CliContext context;

        @Option(names = "--state-dir", required = true, paramLabel = "DIR",
                description = "The lease server's --state-dir.")
        private Path stateDir;

        @Option(names = "--json", description = "One JSON object: the new key.")
        private boolean json;

        RotateServer(CliContext context) {
            this.context = context;
        }

        @Override
        public Integer call() {
            Path dir = stateDir.resolve("signing");
            List<Path> keyFiles;
            try {
                keyFiles = KeyFiles.files(new NfsSafeFiles(), dir);
            } catch (IOException e) {
                keyFiles = List.of();
            }
            if (keyFiles.isEmpty()) {
                throw new CliFailure("no generated signing keys under " + dir + ": give the --state-dir of a lease "
                        + "server that has started with it and signs (one started with --signing-key is rotated by "
                        + "restarting it with another file; one with --no-state-dir or --no-signing has no keys to "
                        + "rotate)");
            }
            try {
                KeyFiles files = new KeyFiles(new NfsSafeFiles(), dir, WRITER, new SecureRandom());
                SigningKey next = files.next();
                String service = "lease-server/" + files.first().id();
                if (json) {
                    ObjectNode n = Json.MAPPER.createObjectNode();
                    n.put("keyId", next.id().toString());
                    n.put("service", service);
                    n.put("directory", dir.toString());
                    context.out().println(Json.line(n));
                } else {
                    context.out().println("key " + next.id() + " of service " + service + " linked in " + dir
                            + "; the running lease server serves and publishes it, then signs with it, within 10 s");
                }
            } catch (IOException | AuditFormatException e) {
                throw new CliFailure("the signing key in " + dir + " could not be rotated: " + e.getMessage()
                        + "; if a new key file was linked, it is the current key, which the server adopts", e);
            }
            return 0;
        }
    }

    /** {@code leasehold keys revoke}. */
    @Command(name = "revoke", mixinStandardHelpOptions = true, versionProvider = LeaseholdCli.Version.class,
            description = {"Revoke a published key from an instant on: 'leasehold verify' flags every statement it "
                + "signed at or after that instant (KEY_REVOKED); those signed before stay valid.",
                "A revocation is a published file and cannot be withdrawn; an earlier one stays in force."})
    static final class Revoke implements Callable<Integer> {
        private final CliContext context;

        @Spec
        private CommandLine.Model.CommandSpec spec;

        @Mixin
        private LogCommand.StoreOption store;

        @Option(names = "--key", required = true, paramLabel = "ID", description = "The key id (32 hex digits, as "
                + "'leasehold keys list' prints it).")
        private String key;

        @Option(names = "--at", paramLabel = "TIME", description = "Revoked from this time (default: now). ISO-8601 "
                + "instant, 'now', or an offset such as -1h.")
        private TimeArg at;

        @Option(names = "--reason", required = true, paramLabel = "TEXT", description = "Why, for the record.")
        private String reason;

        Revoke(CliContext context) {
            this.context = context;
        }

        @Override
        public Integer call() {
            KeyId id;
            try {
                id = KeyId.parse(key);
            } catch (IllegalArgumentException e) {
                throw new ParameterException(spec.commandLine(), "--key '" + key + "': " + e.getMessage());
            }
            if (load(store.store).get(id) == null) {
                throw new CliFailure("no key " + id + " is published in " + PublishedKeys.directory(store.store)
                        + " ('leasehold keys list --store DIR' shows the keys)");
            }
            Instant now = context.time().now();
            long from = Micros.of(at == null ? now : at.resolve(now));
            try {
                new PublishedKeys(new NfsSafeFiles(), store.store, WRITER).revoke(id, from, reason);
            } catch (IOException e) {
                throw new CliFailure("the revocation of key " + id + " could not be published: " + e.getMessage(), e);
            }
            long inForce = load(store.store).get(id).revokedAt();
            context.out().println("key " + id + " revoked from " + micros(inForce)
                    + (inForce != from ? " (an earlier revocation is in force; " + micros(from) + " was not recorded)"
                    : ""));
            return 0;
        }
    }
}
