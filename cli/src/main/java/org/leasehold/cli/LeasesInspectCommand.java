package org.leasehold.cli;

import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

import org.leasehold.lease.HolderStatus;
import org.leasehold.lease.LeaseNames;
import org.leasehold.lease.MetadataEntry;
import org.leasehold.lease.NameStatus;
import org.leasehold.lease.WaiterStatus;
import org.leasehold.remote.RemoteClientConfig;
import org.leasehold.remote.RemoteLeaseService;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code leasehold leases inspect}: what a lease server knows of names (its admin view, {@code LeaseService.inspect}):
 * generation, floor, holders, waiters and recent history. Needs the {@code inspect} permission where the server has
 * an access control list.
 */
@Command(name = "inspect", mixinStandardHelpOptions = true, versionProvider = LeaseholdCli.Version.class,
        description = {"Show what a lease server knows of names: generation, floor, writable-from, holders, waiters "
            + "and recent history.",
            "A name the server does not know (never leased, or forgotten) is reported as unknown."})
final class LeasesInspectCommand implements Callable<Integer> {
    private final CliContext context;

    @Spec
    private CommandLine.Model.CommandSpec spec;

    @Option(names = "--server", required = true, split = ",", paramLabel = "HOST:PORT",
            description = "The lease server(s): every server of the set, as the clients list them (comma-separated "
                    + "or repeated).")
    private List<String> servers;

    @Parameters(arity = "1..*", paramLabel = "NAME", description = "Lease names (prefixes with --prefix).")
    private List<String> names;

    @Option(names = "--prefix", description = "Treat each NAME as a prefix: show every name that starts with it.")
    private boolean prefix;

    @Option(names = "--limit", paramLabel = "N", defaultValue = "1000",
            description = "At most this many names per prefix (default: ${DEFAULT-VALUE}).")
    private int limit;

    @Option(names = "--json", description = "One JSON object a name (see docs/CLI.md for the fields).")
    private boolean json;

    @Option(names = "--tls-trust", paramLabel = "FILE", description = "PEM file of the CA(s) that signed the "
            + "servers' certificates: TLS on (the client property tlsTrustFile).")
    private Path tlsTrust;

    @Option(names = "--tls-cert", paramLabel = "FILE", description = "PEM client certificate chain, for mutual TLS "
            + "(tlsCertFile).")
    private Path tlsCert;

    @Option(names = "--tls-key", paramLabel = "FILE", description = "PEM PKCS#8 key of --tls-cert (tlsKeyFile).")
    private Path tlsKey;

    @Option(names = "--tls-authority", paramLabel = "NAME", description = "The name to verify in the servers' "
            + "certificates instead of the host (tlsAuthority).")
    private String tlsAuthority;

    @Option(names = "--token-file", paramLabel = "FILE", description = "A file holding the bearer token (tokenFile); "
            + "preferred to --token, which other users of the machine can see in the process list.")
    private Path tokenFile;

    @Option(names = "--token", paramLabel = "TOKEN", description = "The bearer token (token).")
    private String token;

    @Option(names = "--call-timeout", paramLabel = "DURATION", defaultValue = "5s",
            description = "How long the call may take (default: ${DEFAULT-VALUE}).")
    private String callTimeout;

    LeasesInspectCommand(CliContext context) {
        this.context = context;
    }

    @Override
    public Integer call() {
        if (limit < 1) {
            throw new ParameterException(spec.commandLine(), "--limit is " + limit + ": give at least 1");
        }
        RemoteClientConfig config;
        try {
            config = RemoteClientConfig.fromProperties(properties());
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        RemoteLeaseService service;
        try {
            service = new RemoteLeaseService(config, context.time());
        } catch (IllegalArgumentException e) {
            // A TLS file that holds no certificate or key: a bad argument, said by the client.
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        try (service) {
            for (String n : names) {
                List<NameStatus> found = service.inspect(n, prefix ? limit : Integer.MAX_VALUE);
                boolean any = false;
                for (NameStatus s : found) {
                    if (prefix || s.name().equals(n)) {
                        any = true;
                        print(s);
                    }
                }
                if (!any) {
                    unknown(n);
                }
            }
        }
        return 0;
    }

    private Map<String, String> properties() {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("servers", String.join(",", servers));
        p.put("process", "leasehold-cli");
        p.put("callTimeout", callTimeout);
        if (tlsTrust != null) {
            p.put("tlsTrustFile", tlsTrust.toString());
        }
        if (tlsCert != null) {
            p.put("tlsCertFile", tlsCert.toString());
        }
        if (tlsKey != null) {
            p.put("tlsKeyFile", tlsKey.toString());
        }
        if (tlsAuthority != null) {
            p.put("tlsAuthority", tlsAuthority);
        }
        if (token != null) {
            p.put("token", token);
        }
        if (tokenFile != null) {
            p.put("tokenFile", tokenFile.toString());
        }
        return p;
    }

    private void unknown(String n) {
        if (json) {
            ObjectNode o = Json.MAPPER.createObjectNode();
            o.put("name", n);
            o.put("known", false);
            context.out().println(Json.line(o));
        } else {
            context.out().println(LeaseNames.printable(n) + (prefix ? "*" : "") + "\tunknown to the server (never "
                    + "leased, or forgotten)");
        }
    }

    private void print(NameStatus s) {
        if (json) {
            context.out().println(Json.line(toJson(s)));
            return;
        }
        context.out().println(LeaseNames.printable(s.name()) + "\tgeneration " + s.generation() + "\tfloor " + s.floor()
                + "\twritable from " + s.writableFrom());
        for (HolderStatus h : s.holders()) {
            context.out().println("  holder " + h.holder() + "\t" + mode(h) + "\t" + h.kind() + "\tgeneration "
                    + h.generation() + "\tgranted " + h.grantedAt() + "\tdeadline " + h.deadline()
                    + (h.inDoubtUntil() != null ? "\tin doubt until " + h.inDoubtUntil() : ""));
        }
        for (WaiterStatus w : s.waiters()) {
            context.out().println("  waiter " + w.holder() + "\t" + w.mode().type() + "\t" + w.kind() + "\tsince "
                    + w.since() + "\tuntil " + w.waitUntil() + "\tnames " + String.join(",", w.names()));
        }
        for (MetadataEntry e : s.history()) {
            context.out().println("  history generation " + e.generation() + "\t" + e.holder() + "\t"
                    + (e.ending() == null ? "HELD" : e.ending()) + "\tat " + e.at()
                    + (e.watermark() != null ? "\twatermark " + e.watermark() : "")
                    + (e.metadata() != null ? "\tmetadata " + e.metadata() : ""));
        }
    }

    private static String mode(HolderStatus h) {
        return h.mode().type() + (h.mode().type() == org.leasehold.lease.LeaseMode.Type.SEMAPHORE
                ? "(" + h.mode().permits() + ")" : "");
    }

    /**
     * The JSON form of a name: {@code name}, {@code known} (true), {@code generation}, {@code floor},
     * {@code writableFrom}, {@code holders}, {@code waiters}, {@code history} (see docs/CLI.md).
     */
    static ObjectNode toJson(NameStatus s) {
        ObjectNode o = Json.MAPPER.createObjectNode();
        o.put("name", s.name());
        o.put("known", true);
        o.put("generation", s.generation());
        o.put("floor", text(s.floor()));
        o.put("writableFrom", text(s.writableFrom()));
        ArrayNode holders = o.putArray("holders");
        for (HolderStatus h : s.holders()) {
            ObjectNode n = holders.addObject();
            n.put("process", h.holder().process());
            n.put("owner", h.holder().owner());
            n.put("mode", h.mode().type().name());
            n.put("permits", h.mode().permits());
            n.put("kind", h.kind().name());
            n.put("generation", h.generation());
            n.put("correlationId", h.correlationId() == null ? null : h.correlationId().toString());
            n.put("grantedAt", text(h.grantedAt()));
            n.put("deadline", text(h.deadline()));
            n.put("inDoubtUntil", text(h.inDoubtUntil()));
        }
        ArrayNode waiters = o.putArray("waiters");
        for (WaiterStatus w : s.waiters()) {
            ObjectNode n = waiters.addObject();
            n.put("process", w.holder().process());
            n.put("owner", w.holder().owner());
            n.put("mode", w.mode().type().name());
            n.put("permits", w.mode().permits());
            n.put("kind", w.kind().name());
            ArrayNode ns = n.putArray("names");
            new ArrayList<>(w.names()).forEach(ns::add);
            n.put("since", text(w.since()));
            n.put("waitUntil", text(w.waitUntil()));
        }
        ArrayNode history = o.putArray("history");
        for (MetadataEntry e : s.history()) {
            ObjectNode n = history.addObject();
            n.put("generation", e.generation());
            n.put("process", e.holder() == null ? null : e.holder().process());
            n.put("owner", e.holder() == null ? null : e.holder().owner());
            n.put("ending", e.ending() == null ? null : e.ending().name());
            n.put("at", text(e.at()));
            n.put("watermark", text(e.watermark()));
            n.put("metadata", e.metadata());
        }
        return o;
    }

    private static String text(Instant i) {
        return i == null ? null : i.toString();
    }
}
