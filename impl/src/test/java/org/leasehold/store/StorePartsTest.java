package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.util.List;

import org.junit.jupiter.api.Test;

/**
 * The store's parts get what they need as a {@link StoreContext}, never the store itself, and a file cursor knows
 * its bucket only through {@link CursorBucket}, never the reader.
 */
class StorePartsTest {
    private static final List<Class<?>> PARTS = List.of(Appender.class, LatenessCheck.class, DataFiles.class,
            FileRunWriter.class, Metronome.class, LogReader.class, FileCursor.class, Sealer.class, BucketWalker.class);

    @Test
    void noPartHoldsOrReceivesTheStore() {
        for (Class<?> part : PARTS) {
            for (Field f : part.getDeclaredFields()) {
                assertNotEquals(FileBagStore.class, f.getType(), part.getSimpleName() + "." + f.getName());
            }
            for (Constructor<?> c : part.getDeclaredConstructors()) {
                for (Class<?> p : c.getParameterTypes()) {
                    assertNotEquals(FileBagStore.class, p, "a constructor of " + part.getSimpleName());
                }
            }
        }
    }

    @Test
    void aFileCursorKnowsItsBucketNotTheReader() {
        for (Field f : FileCursor.class.getDeclaredFields()) {
            assertNotEquals(LogReader.class, f.getType(), "FileCursor." + f.getName());
            assertNotEquals(LogReader.class, f.getType().getEnclosingClass(), "FileCursor." + f.getName());
        }
        for (Constructor<?> c : FileCursor.class.getDeclaredConstructors()) {
            for (Class<?> p : c.getParameterTypes()) {
                assertNotEquals(LogReader.class, p.getEnclosingClass(), "a constructor of FileCursor");
            }
        }
    }
}
