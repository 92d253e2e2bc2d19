/**
 * The bag store on a shared file system: {@link org.leasehold.store.FileBagStore} and its parts (appender with group
 * commit, sealer, metronome, ordered reader) and the on-disk formats in {@code format}. Every file-system call goes through
 * {@link org.leasehold.fs.NfsSafeFiles}. Depends on {@code org.leasehold.time}, {@code org.leasehold.fs} and the API
 * types, never on the lease engine.
 */
package org.leasehold.store;
