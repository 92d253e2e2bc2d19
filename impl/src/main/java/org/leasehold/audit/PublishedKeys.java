package org.leasehold.audit;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.leasehold.fs.NfsSafeFiles;

/**
 * The public keys of the lease services that sign a bag store's witnesses, published in its root under
 * {@code .leasehold/keys/} (FORMAT.md, "Published keys"): {@code <key id>.key} states a key, the service it signs
 * for and its validity; {@code <key id>.revoked} revokes it from an instant on. Each file is written to a prepared
 * file, forced and linked into place, and never changed: NFS-safe operations only. A verifier reads them all
 * ({@link #load()}).
 */
public final class PublishedKeys {
    private static final String KEY_HEADER = "leasehold-public-key 1";
    private static final String REVOCATION_HEADER = "leasehold-key-revocation 1";

    private final NfsSafeFiles fs;
    private final Path dir;
    private final String writer;
    private final SecureRandom random = new SecureRandom();

    /** The published keys of the bag store at {@code root}, written as {@code writer}. */
    public PublishedKeys(NfsSafeFiles fs, Path root, String writer) {
        this.fs = fs;
        this.dir = directory(root);
        this.writer = writer;
    }

    /** {@code <root>/.leasehold/keys}. */
    public static Path directory(Path root) {
        return root.resolve(".leasehold").resolve("keys");
    }

    /**
     * Publishes {@code key} (before it signs anything). Publishing a key that is already published with the same
     * content does nothing; a different statement of the same key is refused, since published files never change.
     *
     * @throws AuditFormatException if another statement of this key is published
     */
    public void publish(PublishedKey key) throws IOException, AuditFormatException {
        ensureDirectory();
        String text = KEY_HEADER + "\nkey-id " + key.id() + "\nservice " + key.serviceId() + "\ned25519 "
                + key.key().base64() + "\nvalid-from " + key.validFrom() + "\nvalid-until "
                + (key.validUntil() == Long.MAX_VALUE ? "open" : Long.toString(key.validUntil())) + "\n";
        Path name = dir.resolve(key.id() + ".key");
        if (!KeyFiles.publish(fs, name, writer, text.getBytes(StandardCharsets.UTF_8), random, false)) {
            PublishedKey there = parseKey(name, KeyFiles.readText(fs, name));
            if (!there.key().equals(key.key()) || !there.serviceId().equals(key.serviceId())) {
                throw new AuditFormatException(name + " already publishes key " + there.id() + " for service '"
                        + there.serviceId() + "': a published key never changes");
            }
        }
    }

    /** Revokes {@code id} from {@code atMicros} on (an earlier published revocation stays in force). */
    public void revoke(KeyId id, long atMicros, String reason) throws IOException {
        ensureDirectory();
        String text = REVOCATION_HEADER + "\nkey-id " + id + "\nrevoked-at " + atMicros + "\nreason "
                + reason.replace('\n', ' ') + "\n";
        KeyFiles.publish(fs, dir.resolve(id + ".revoked"), writer, text.getBytes(StandardCharsets.UTF_8), random,
                false);
    }

    private void ensureDirectory() throws IOException {
        fs.createDirectory(dir.getParent());
        fs.createDirectory(dir);
    }

    /**
     * Every published key with its revocation; an empty set if none is published.
     *
     * @throws AuditFormatException naming the file, if a key or revocation file does not parse
     */
    public KeySet load() throws IOException, AuditFormatException {
        return load(fs, dir);
    }

    /**
     * Every key published in the keys directory {@code dir} (normally {@link #directory(Path)} of a store root), with
     * its revocation; an empty set if there is none. For readers that only verify ({@code leasehold verify}).
     *
     * @throws AuditFormatException naming the file, if a key or revocation file does not parse
     */
    public static KeySet load(NfsSafeFiles fs, Path dir) throws IOException, AuditFormatException {
        List<PublishedKey> keys = new ArrayList<>();
        Map<KeyId, Long> revoked = new HashMap<>();
        for (String s : KeyFiles.listOrEmpty(fs, dir)) {
            if (s.endsWith(".key") && s.length() == 36) {
                keys.add(parseKey(dir.resolve(s), KeyFiles.readText(fs, dir.resolve(s))));
            } else if (s.endsWith(".revoked") && s.length() == 40) {
                Map<String, String> f = fields(dir.resolve(s), KeyFiles.readText(fs, dir.resolve(s)),
                        REVOCATION_HEADER);
                revoked.merge(KeyId.parse(f.get("key-id")), number(dir.resolve(s), f, "revoked-at"), Math::min);
            }
        }
        List<PublishedKey> out = new ArrayList<>(keys.size());
        for (PublishedKey k : keys) {
            Long r = revoked.get(k.id());
            out.add(r == null ? k : k.revokedFrom(r));
        }
        return KeySet.of(out);
    }

    private static PublishedKey parseKey(Path file, String text) throws AuditFormatException {
        Map<String, String> f = fields(file, text, KEY_HEADER);
        VerifyingKey key;
        try {
            key = VerifyingKey.of(Base64.getUrlDecoder().decode(f.get("ed25519")));
        } catch (IllegalArgumentException e) {
            throw new AuditFormatException(file + ": the line 'ed25519' is not a base64url Ed25519 key: "
                    + e.getMessage(), e);
        }
        if (!key.id().toString().equals(f.get("key-id"))) {
            throw new AuditFormatException(file + ": key-id " + f.get("key-id") + " is not the id of its key ("
                    + key.id() + ")");
        }
        String until = f.get("valid-until");
        return new PublishedKey(key, f.get("service"), number(file, f, "valid-from"),
                "open".equals(until) ? Long.MAX_VALUE : number(file, f, "valid-until"), Long.MAX_VALUE);
    }

    private static long number(Path file, Map<String, String> f, String field) throws AuditFormatException {
        try {
            return Long.parseLong(f.get(field));
        } catch (NumberFormatException e) {
            throw new AuditFormatException(file + ": the line '" + field + "' is not a number of microseconds: "
                    + f.get(field), e);
        }
    }

    private static Map<String, String> fields(Path file, String text, String header) throws AuditFormatException {
        String[] lines = text.split("\n");
        if (lines.length == 0 || !lines[0].equals(header)) {
            throw new AuditFormatException(file + " does not start with '" + header + "': not a file of this version");
        }
        Map<String, String> f = new HashMap<>();
        for (int i = 1; i < lines.length; i++) {
            int sp = lines[i].indexOf(' ');
            if (sp > 0) {
                f.put(lines[i].substring(0, sp), lines[i].substring(sp + 1));
            }
        }
        for (String need : header == KEY_HEADER ? new String[] {"key-id", "service", "ed25519", "valid-from",
            "valid-until"} : new String[] {"key-id", "revoked-at"}) {
            if (!f.containsKey(need)) {
                throw new AuditFormatException(file + " has no line '" + need + "'");
            }
        }
        try {
            KeyId.parse(f.get("key-id"));
        } catch (IllegalArgumentException e) {
            throw new AuditFormatException(file + ": " + e.getMessage(), e);
        }
        return f;
    }
}
