package org.leasehold.cli;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;

import org.leasehold.bag.Message;
import org.leasehold.bag.ReadProblem;
import org.leasehold.bag.StampedLease;
import org.leasehold.time.Micros;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * How {@code log cat} and {@code log tail} print a message. Text: one line of tab-separated fields, timestamp,
 * {@code sealed} or {@code tentative}, writer, leases ({@code name@generation}, comma-separated, {@code -} for none)
 * and the payload (as text if it is UTF-8 without control characters, else {@code base64:} and its Base64). JSON: one
 * object a line, see {@link #json}.
 */
final class MessageOutput {
    private MessageOutput() {
    }

    static String line(Message m, boolean json) {
        return json ? Json.line(json(m)) : text(m);
    }

    static String text(Message m) {
        StringBuilder b = new StringBuilder(64 + m.payloadLength());
        b.append(m.timestamp()).append('\t').append(m.tentative() ? "tentative" : "sealed").append('\t')
                .append(m.writer()).append('\t');
        List<StampedLease> leases = m.leases();
        if (leases.isEmpty()) {
            b.append('-');
        }
        for (int i = 0; i < leases.size(); i++) {
            if (i > 0) {
                b.append(',');
            }
            b.append(leases.get(i).name()).append('@').append(leases.get(i).generation());
        }
        b.append('\t');
        String text = printable(m);
        if (text != null) {
            b.append(text);
        } else {
            b.append("base64:").append(Base64.getEncoder().encodeToString(m.payload()));
        }
        return b.toString();
    }

    /**
     * The JSON form: {@code log}, {@code bucket}, {@code timestamp} (ISO-8601), {@code timestampMicros}, {@code writer},
     * {@code file}, {@code offset}, {@code index}, {@code sealed}, {@code leases} ({@code name}, {@code generation},
     * {@code witness} in Base64), {@code payloadLength}, {@code payload} (Base64) and {@code text} (the payload as
     * UTF-8, or null if it is not valid UTF-8).
     */
    static ObjectNode json(Message m) {
        ObjectNode n = Json.MAPPER.createObjectNode();
        n.put("log", m.log());
        n.put("bucket", m.bucket().toString());
        n.put("timestamp", m.timestamp().toString());
        n.put("timestampMicros", Micros.of(m.timestamp()));
        n.put("writer", m.writer());
        n.put("file", m.file());
        n.put("offset", m.offset());
        n.put("index", m.index());
        n.put("sealed", !m.tentative());
        ArrayNode leases = n.putArray("leases");
        for (StampedLease l : m.leases()) {
            ObjectNode ln = leases.addObject();
            ln.put("name", l.name());
            ln.put("generation", l.generation());
            ln.put("witness", Base64.getEncoder().encodeToString(l.witness()));
        }
        n.put("payloadLength", m.payloadLength());
        n.put("payload", Base64.getEncoder().encodeToString(m.payload()));
        n.put("text", utf8(m.payloadBuffer()));
        return n;
    }

    /** A skipped record, for standard error. */
    static String problem(ReadProblem p) {
        return "leasehold: skipped " + p;
    }

    /** The payload as text if it is UTF-8 without control characters (tab excepted), else null. */
    private static String printable(Message m) {
        String s = utf8(m.payloadBuffer());
        if (s == null) {
            return null;
        }
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if ((c < 0x20 && c != '\t') || c == 0x7f) {
                return null;
            }
        }
        return s;
    }

    private static String utf8(ByteBuffer b) {
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(b).toString();
        } catch (CharacterCodingException e) {
            return null;
        }
    }
}
