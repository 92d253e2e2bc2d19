package org.leasehold.store;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;

/** Short, human descriptions of I/O failures for exception messages. */
final class IoErrors {
    private IoErrors() {
    }

    /** What went wrong, without the path (the caller names it). */
    static String describe(IOException e) {
        if (e instanceof NoSuchFileException) {
            return "it does not exist";
        }
        if (e instanceof NotDirectoryException) {
            return "it is not a directory";
        }
        if (e instanceof AccessDeniedException) {
            return "permission denied";
        }
        if (e instanceof FileSystemException f && f.getReason() != null) {
            return f.getReason();
        }
        return e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
    }

    /** True for "no space left on device" and "disk quota exceeded". */
    static boolean isNoSpace(IOException e) {
        String m = e instanceof FileSystemException f && f.getReason() != null ? f.getReason() : e.getMessage();
        return m != null && (m.contains("No space left") || m.contains("Disk quota exceeded"));
    }

    /** True if the failure says the place is not writable (permissions or a read-only file system). */
    static boolean isNotWritable(IOException e) {
        if (e instanceof AccessDeniedException) {
            return true;
        }
        String m = e instanceof FileSystemException f && f.getReason() != null ? f.getReason() : e.getMessage();
        return m != null && (m.contains("Read-only file system") || m.contains("Operation not permitted"));
    }

    /** Advice matching the failure. */
    static String advice(IOException e) {
        if (isNoSpace(e)) {
            return "free space on the store's file system (or raise the quota) and retry";
        }
        if (isNotWritable(e)) {
            return "make the store's root writable by this process (check permissions and that the mount is read-write)";
        }
        if (e instanceof NoSuchFileException) {
            return "check that the store's root exists and is mounted";
        }
        return "check the store's file system and retry";
    }
}
