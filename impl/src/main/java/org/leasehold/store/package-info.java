/**
 * The bag store on a shared file system: {@link org.leasehold.store.FileBagStore} and its parts (appender with group
 * commit, sealer, metronome, ordered reader), the on-disk formats in {@code format}, and the file-system boundary in
 * {@code fs}. Depends on {@code org.leasehold.time} and the API types, never on the lease engine.
 */
package org.leasehold.store;
