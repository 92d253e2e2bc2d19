package org.leasehold.cli;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.HexFormat;
import java.util.concurrent.Callable;

import org.leasehold.bag.ViewDefinition;
import org.leasehold.bag.ViewState;
import org.leasehold.store.StoreReader;

import com.fasterxml.jackson.databind.node.ObjectNode;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code leasehold view show}: the state of an application's view of a log now, read as the store's API reads it (the
 * latest readable snapshot and the messages after its boundary), printed as the definition encodes it. Reads only:
 * no writer identity, nothing built or published.
 */
@Command(name = "show", mixinStandardHelpOptions = true, versionProvider = LeaseholdCli.Version.class,
        description = {"Print the state of a view of a log now: the latest readable snapshot (its boundary) with the "
            + "messages after it applied, the state's encoding (as text when it is UTF-8 text), its size and SHA-256.",
            "Reads only: builds and publishes nothing."})
final class ViewShowCommand implements Callable<Integer> {
    private final CliContext context;

    @Spec
    private CommandLine.Model.CommandSpec spec;

    @Mixin
    private LogCommand.StoreOption store;

    @Mixin
    private LogCommand.LogOption log;

    @Mixin
    private ViewCommand.DefinitionOption definition;

    @Option(names = "--sealed-only", description = "Apply only messages of sealed buckets (the state then never "
            + "changes for this log's past).")
    private boolean sealedOnly;

    @Option(names = "--json", description = "One JSON object (see docs/CLI.md for its fields).")
    private boolean json;

    ViewShowCommand(CliContext context) {
        this.context = context;
    }

    @Override
    public Integer call() throws Exception {
        try (StoreReader reader = store.open(context)) {
            reader.geometry(log.log);
            try (ViewCommand.DefinitionOption.Loaded loaded = definition.load(spec.commandLine())) {
                show(reader, loaded.definition());
            }
        }
        return 0;
    }

    private <S> void show(StoreReader reader, ViewDefinition<S> def) throws Exception {
        ViewState<S> v;
        try {
            v = reader.view(log.log, def, !sealedOnly);
        } catch (IllegalArgumentException e) {
            throw new CliFailure("view definition '" + definition.className + "' is not acceptable: " + e.getMessage());
        }
        byte[] state = def.encode(v.state());
        String sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(state));
        String text = text(state);
        if (json) {
            ObjectNode n = Json.MAPPER.createObjectNode();
            n.put("log", log.log);
            n.put("view", def.name());
            n.put("version", def.version());
            n.put("snapshotBoundary", v.boundary() == null ? null : v.boundary().toString());
            n.put("tailMessages", v.tailMessages());
            n.put("tentative", v.tentative());
            n.put("stateBytes", state.length);
            n.put("stateSha256", sha);
            n.put("state", Base64.getEncoder().encodeToString(state));
            n.put("text", text);
            context.out().println(Json.line(n));
            return;
        }
        row("log", log.log);
        row("view", def.name());
        row("version", def.version());
        row("snapshot", v.boundary() == null ? "- (folded from the log's beginning)" : v.boundary().toString());
        row("tail messages", v.tailMessages());
        row("tentative", v.tentative());
        row("state bytes", state.length);
        row("state sha256", sha);
        if (text == null) {
            row("state", "(binary; --json gives it in Base64)");
        } else {
            // One row, its further lines indented under the first.
            String body = text.endsWith("\n") ? text.substring(0, text.length() - 1) : text;
            row("state", body.replace("\n", "\n" + " ".repeat(16)));
        }
    }

    private void row(String name, Object value) {
        context.out().printf("%-15s %s%n", name, value);
    }

    /** The state as text if it is UTF-8 without control characters (tab and newline allowed), else null. */
    static String text(byte[] b) {
        String s;
        try {
            s = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(b)).toString();
        } catch (CharacterCodingException e) {
            return null;
        }
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) {
                return null;
            }
        }
        return s;
    }
}
