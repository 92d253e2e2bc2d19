/**
 * The bag store's on-disk formats: data-file frames, lock files and log descriptors, as documented byte by byte in
 * {@code docs/FORMAT.md}.
 */
package org.leasehold.store.format;
