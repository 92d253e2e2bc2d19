package org.leasehold.remote;

import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.function.Consumer;
import java.util.function.ToIntFunction;

/** How both ends of a session stream cut what is queued into messages. */
public final class Batches {
    private Batches() {
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
