package org.leasehold.store;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;

/** One data file of this writer in one bucket, as the committer knows it: its size, and whether it was given up. */
final class DataFile {
    private static final System.Logger LOG = System.getLogger(DataFile.class.getName());

    final long bucket;
    final Path path;
    final String name;
    final int seq;
    FileChannel ch;
    long size;
    long plannedLastT = Long.MIN_VALUE;
    boolean abandoned;

    DataFile(long bucket, Path path, String name, int seq, FileChannel ch) {
        this.bucket = bucket;
        this.path = path;
        this.name = name;
        this.seq = seq;
        this.ch = ch;
    }

    /** Closes the open channel, if any; a failure to close is logged only (every acknowledged byte was flushed). */
    void closeQuietly() {
        FileChannel c = ch;
        ch = null;
        if (c != null) {
            try {
                c.close();
            } catch (IOException e) {
                LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-6104 closing {0}: {1}", path, e);
            }
        }
    }
}
