package org.leasehold.store;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Writes a batch's file runs (its frames grouped per data file, {@link FileRun}), one gathering write per run at its
 * file's size, then makes each touched data file durable once as the flush policy says (force, or close and force
 * later, or close); records in each run what failed. Committer thread only.
 */
final class FileRunWriter {
    private final LogHandle log;
    private final FlushPolicy policy;
    private final StoreHooks hooks;
    private final DataFiles files;
    private final AppendCounters counters;

    FileRunWriter(StoreContext ctx, LogHandle log, DataFiles files, AppendCounters counters) {
        this.log = log;
        this.policy = ctx.config().flushPolicy();
        this.hooks = ctx.hooks();
        this.files = files;
        this.counters = counters;
    }

    /** Writes, then flushes, every file run; places each frame (file and offset) as it goes. */
    void write(List<FileRun> fileRuns) {
        for (FileRun s : fileRuns) {
            writeSegment(s);
        }
        Set<DataFile> touched = new LinkedHashSet<>();
        for (FileRun s : fileRuns) {
            touched.add(s.file);
        }
        Map<DataFile, IOException> flushErrors = new HashMap<>();
        for (DataFile f : touched) {
            try {
                flush(f);
            } catch (IOException ex) {
                flushErrors.put(f, ex);
                f.abandoned = true;
            }
            if (f.abandoned) {
                f.closeQuietly();
            }
        }
        for (FileRun s : fileRuns) {
            s.flushError = flushErrors.get(s.file);
        }
    }

    private void writeSegment(FileRun s) {
        DataFile f = s.file;
        ByteBuffer[] bufs = new ByteBuffer[s.items.size()];
        long pos = f.size;
        int total = 0;
        for (int i = 0; i < bufs.length; i++) {
            PendingAppend p = s.items.get(i);
            p.file = f;
            p.offset = pos + total;
            total += p.length;
            bufs[i] = p.frame;
        }
        try {
            int tear = hooks.tearAfter(log.name(), f.path, total);
            if (tear >= 0) {
                tornWrite(f, bufs, pos, tear);
            }
            f.ch.position(pos);
            long done = 0;
            while (done < total) {
                done += f.ch.write(bufs);
            }
            f.size = pos + total;
            counters.frames.add(bufs.length);
            counters.bytes.add(total);
        } catch (IOException ex) {
            long written = 0;
            for (ByteBuffer b : bufs) {
                written += b.position();
            }
            f.size = pos + written;
            f.abandoned = true;
            s.writeError = ex;
        }
    }

    private void flush(DataFile f) throws IOException {
        if (policy.mode() == FlushPolicy.Mode.EVERY_BATCH) {
            f.ch.force(false);
            counters.forces.increment();
        } else {
            FileChannel ch = f.ch;
            f.ch = null;
            ch.close();
            if (policy.mode() == FlushPolicy.Mode.INTERVAL) {
                files.markDirty(f);
            }
        }
    }

    /** Test hook path: write only {@code tear} bytes, force them, and let the hook stop the process. */
    private void tornWrite(DataFile f, ByteBuffer[] bufs, long pos, int tear) throws IOException {
        ByteBuffer all = ByteBuffer.allocate(tear);
        for (ByteBuffer b : bufs) {
            ByteBuffer d = b.duplicate();
            if (d.remaining() > all.remaining()) {
                d.limit(d.position() + all.remaining());
            }
            all.put(d);
        }
        all.flip();
        Sealer.writeFully(f.ch, all, pos);
        f.ch.force(false);
        hooks.torn(log.name(), f.path);
    }
}
