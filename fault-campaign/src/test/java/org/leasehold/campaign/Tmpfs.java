package org.leasehold.campaign;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * A small tmpfs mount for the campaign's store, so that it can fill up (needs root; without it the campaign injects no
 * full file system and says so).
 */
final class Tmpfs implements AutoCloseable {
    private final Path dir;

    private Tmpfs(Path dir) {
        this.dir = dir;
    }

    /** Mounts a tmpfs with {@code options} on {@code dir}; returns null with the reason in {@code why[0]} if not allowed. */
    static Tmpfs mount(Path dir, String options, String[] why) throws IOException, InterruptedException {
        Process p;
        try {
            p = new ProcessBuilder("mount", "-t", "tmpfs", "-o", options, "tmpfs", dir.toString())
                    .redirectErrorStream(true).start();
        } catch (IOException e) {
            why[0] = "cannot run mount: " + e.getMessage();
            return null;
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
            why[0] = "mount -t tmpfs is not permitted here (" + out + "); run the tests as root to cover this case";
            return null;
        }
        return new Tmpfs(dir);
    }

    /** Runs {@code mount -o remount,<options>}. */
    void remount(String options) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("mount", "-o", "remount," + options, dir.toString()).redirectErrorStream(true)
                .start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IOException("remount " + options + " failed: " + out);
        }
    }

    @Override
    public void close() throws IOException {
        Process p = new ProcessBuilder("umount", "-l", dir.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        try {
            if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IOException("umount " + dir + " failed: " + out);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while unmounting " + dir, e);
        }
    }
}
