package org.leasehold.store;

import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicReference;

import org.leasehold.bag.AppendRequest;

/** Hooks a test arms with one-shot actions. */
final class ScriptedHooks implements StoreHooks {
    final AtomicReference<Runnable> afterEncode = new AtomicReference<>();
    final AtomicReference<Runnable> beforeWrite = new AtomicReference<>();
    final AtomicReference<Runnable> afterWrite = new AtomicReference<>();
    final AtomicReference<Runnable> bucketListed = new AtomicReference<>();
    final AtomicReference<Runnable> retentionStep = new AtomicReference<>();

    @Override
    public void afterEncode(AppendRequest request, long timestamp) {
        run(afterEncode);
    }

    @Override
    public void beforeWrite(String log, long bucket) {
        run(beforeWrite);
    }

    @Override
    public void afterWrite(String log) {
        run(afterWrite);
    }

    @Override
    public void bucketListed(String log, long bucket) {
        run(bucketListed);
    }

    @Override
    public void retentionStep(String log, long bucket) {
        run(retentionStep);
    }

    @Override
    public int tearAfter(String log, Path file, int bytes) {
        return -1;
    }

    private static void run(AtomicReference<Runnable> ref) {
        Runnable r = ref.getAndSet(null);
        if (r != null) {
            r.run();
        }
    }
}
