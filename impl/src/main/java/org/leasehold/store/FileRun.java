package org.leasehold.store;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/** The frames of one batch going to one data file, in order, and what went wrong writing or flushing them. */
final class FileRun {
    final DataFile file;
    final List<PendingAppend> items = new ArrayList<>();
    IOException writeError;
    IOException flushError;

    FileRun(DataFile file) {
        this.file = file;
    }
}
