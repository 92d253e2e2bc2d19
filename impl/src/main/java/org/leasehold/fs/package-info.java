/**
 * The file-system floor: {@link org.leasehold.fs.NfsSafeFiles}, the one class through which Leasehold calls a shared
 * file system (the bag store, the adapter's prepare journal and ownership files, time marks), limited to operations
 * that are safe on NFS; and {@link org.leasehold.fs.TimeMarkFiles}, a {@link org.leasehold.time.TimeMark} kept in a
 * directory with those operations. Depends on {@code org.leasehold.time} only.
 */
package org.leasehold.fs;
