package org.leasehold.server;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * The bearer tokens the server accepts and whose principal each stands for, read from a file with one
 * {@code <principal> <token>} pair per line ({@code #} starts a comment). Tokens are kept only as SHA-256 digests and
 * compared by digest, so a timing side channel reveals nothing about a token.
 */
final class Credentials {
    private final Map<String, String> principalByDigest;

    private Credentials(Map<String, String> principalByDigest) {
        this.principalByDigest = principalByDigest;
    }

    static Credentials read(Path file) throws IOException {
        List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        Map<String, String> map = new HashMap<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            String[] parts = line.split("\\s+");
            if (parts.length != 2) {
                throw new IllegalArgumentException(file + " line " + (i + 1) + ": expected '<principal> <token>', got "
                        + parts.length + " field(s)");
            }
            if (parts[1].length() < 16) {
                throw new IllegalArgumentException(file + " line " + (i + 1) + ": the token of '" + parts[0]
                        + "' is shorter than 16 characters; use a long random token (e.g. openssl rand -hex 32)");
            }
            String previous = map.put(digest(parts[1]), parts[0]);
            if (previous != null) {
                throw new IllegalArgumentException(file + " line " + (i + 1) + ": the same token is given to '" + previous
                        + "' and '" + parts[0] + "': give each principal its own token");
            }
        }
        if (map.isEmpty()) {
            throw new IllegalArgumentException(file + " has no '<principal> <token>' line: nobody could authenticate");
        }
        return new Credentials(Map.copyOf(map));
    }

    /** The principal of {@code token}, or null. */
    String principalOf(String token) {
        return principalByDigest.get(digest(token));
    }

    int size() {
        return principalByDigest.size();
    }

    private static String digest(String token) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }
}
