package org.leasehold.store;

import java.nio.file.Path;

/**
 * A log as the store uses it: its name, directory and geometry (as its descriptor records it).
 *
 * @param name     the log's name
 * @param dir      the log's directory
 * @param geometry bucket width, grace and clock error
 */
record LogHandle(String name, Path dir, LogGeometry geometry) {

    Path bucketDir(long start) {
        return LogGeometry.bucketDir(dir, start);
    }

    String bucketPath(long start) {
        return LogGeometry.relativePath(start);
    }
}
