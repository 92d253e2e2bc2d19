/**
 * The bag store's file-system boundary: {@link org.leasehold.store.fs.NfsSafeFiles}, the one class that calls the file
 * system, limited to operations that are safe on NFS.
 */
package org.leasehold.store.fs;
