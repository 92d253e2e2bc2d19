package org.leasehold.cli.verify;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.leasehold.audit.AuditFormatException;
import org.leasehold.audit.KeyId;
import org.leasehold.audit.KeySet;
import org.leasehold.audit.PublishedKey;
import org.leasehold.audit.VerifyingKey;

/**
 * Reads published public keys from a directory ({@code <root>/.leasehold/keys/} by default): each
 * {@code <key id>.key} file is one key with its service and validity, each {@code <key id>.revoked} file a revocation
 * (a key revoked twice counts from the earlier time). ASCII, LF line ends:
 *
 * <pre>
 * leasehold-key 1
 * service &lt;service id&gt;
 * valid-from &lt;µs&gt;
 * valid-until &lt;µs, or "open"&gt;
 * -----BEGIN PUBLIC KEY-----
 * ...
 * -----END PUBLIC KEY-----
 *
 * leasehold-revoked 1
 * revoked-at &lt;µs&gt;
 * </pre>
 *
 * A file that does not read so is an error naming the file: a verifier must not pass over a key set it cannot read.
 */
public final class KeyFiles {
    private KeyFiles() {
    }

    /** The keys in {@code dir}; an empty set if the directory does not exist. */
    public static KeySet read(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return KeySet.of(List.of());
        }
        List<PublishedKey> keys = new ArrayList<>();
        Map<KeyId, Long> revoked = new HashMap<>();
        try (DirectoryStream<Path> s = Files.newDirectoryStream(dir)) {
            for (Path p : s) {
                String n = p.getFileName().toString();
                if (n.endsWith(".key")) {
                    keys.add(key(p, Files.readString(p, StandardCharsets.US_ASCII)));
                } else if (n.endsWith(".revoked")) {
                    revoked.merge(idOf(p, n.substring(0, n.length() - ".revoked".length())),
                            revokedAt(p, Files.readString(p, StandardCharsets.US_ASCII)), Math::min);
                }
            }
        }
        List<PublishedKey> out = new ArrayList<>();
        for (PublishedKey k : keys) {
            Long at = revoked.get(k.id());
            out.add(at == null ? k : k.revokedFrom(at));
        }
        return KeySet.of(out);
    }

    /** The text of a {@code .key} file for {@code key}. */
    public static String keyFile(PublishedKey key) {
        return "leasehold-key 1\nservice " + key.serviceId() + "\nvalid-from " + key.validFrom() + "\nvalid-until "
                + (key.validUntil() == Long.MAX_VALUE ? "open" : Long.toString(key.validUntil())) + "\n"
                + key.key().toPem();
    }

    /** The text of a {@code .revoked} file. */
    public static String revokedFile(long revokedAt) {
        return "leasehold-revoked 1\nrevoked-at " + revokedAt + "\n";
    }

    private static KeyId idOf(Path p, String stem) throws IOException {
        try {
            return KeyId.parse(stem);
        } catch (IllegalArgumentException e) {
            throw new IOException("the key file " + p + " is not named by a key id (32 hexadecimal digits)", e);
        }
    }

    private static PublishedKey key(Path p, String text) throws IOException {
        String[] lines = text.split("\n");
        try {
            if (lines.length < 6 || !lines[0].equals("leasehold-key 1") || !lines[1].startsWith("service ")
                    || !lines[2].startsWith("valid-from ") || !lines[3].startsWith("valid-until ")) {
                throw new IOException("the key file " + p + " does not start with 'leasehold-key 1', 'service', "
                        + "'valid-from' and 'valid-until' lines");
            }
            String until = lines[3].substring("valid-until ".length());
            VerifyingKey k = VerifyingKey.fromPem(text.substring(text.indexOf("-----BEGIN")));
            String n = p.getFileName().toString();
            if (!k.id().equals(idOf(p, n.substring(0, n.length() - ".key".length())))) {
                throw new IOException("the key file " + p + " holds key " + k.id() + ", not the key its name says");
            }
            return new PublishedKey(k, lines[1].substring("service ".length()),
                    Long.parseLong(lines[2].substring("valid-from ".length())),
                    until.equals("open") ? Long.MAX_VALUE : Long.parseLong(until), Long.MAX_VALUE);
        } catch (AuditFormatException | IllegalArgumentException e) {
            throw new IOException("the key file " + p + " does not hold a valid key: " + e.getMessage(), e);
        }
    }

    private static long revokedAt(Path p, String text) throws IOException {
        String[] lines = text.split("\n");
        try {
            if (lines.length == 2 && lines[0].equals("leasehold-revoked 1") && lines[1].startsWith("revoked-at ")) {
                return Long.parseLong(lines[1].substring("revoked-at ".length()));
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IOException("the revocation file " + p + " does not read as 'leasehold-revoked 1' and a "
                + "'revoked-at <us>' line");
    }
}
