package org.leasehold.wire;

import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.ToIntFunction;



/** How both ends of a session stream cut what is queued into messages. */
public final class Batches {
    private Batches() {
    }

    /**
     * Sends what is queued in {@code queue}, joining what is queued meanwhile into the same batches ({@link #drain}):
     * one thread sends at a time (the one that sets {@code sending}), and while it does, other threads' items queue up
     * for its next batch; a thread that finds another sending leaves its items to it.
     */
    public static <T> void send(Queue<T> queue, AtomicBoolean sending, ToIntFunction<T> size, Consumer<List<T>> emit) {
        while (!queue.isEmpty() && sending.compareAndSet(false, true)) {
            try {
                drain(queue, size, emit);
            } finally {
                sending.set(false);
            }
            // An item queued after the last poll but before the flag was cleared is sent by the next round.
        }
    }

    /**
     * Takes everything from {@code queue} (including what is added meanwhile) and hands it to {@code emit} in order, in
     * batches of at most {@link Protocol#BATCH_BYTES} by {@code size}; an item larger than that goes alone.
     */
    public static <T> void drain(Queue<T> queue, ToIntFunction<T> size, Consumer<List<T>> emit) {
        List<T> batch = new ArrayList<>();
        int bytes = 0;
        T item;
        while ((item = queue.poll()) != null) {
            int n = size.applyAsInt(item);
            if (!batch.isEmpty() && bytes + n > Protocol.BATCH_BYTES) {
                emit.accept(batch);
                batch = new ArrayList<>();
                bytes = 0;
            }
            batch.add(item);
            bytes += n;
        }
        if (!batch.isEmpty()) {
            emit.accept(batch);
        }
    }
}
