package org.leasehold.simulation.nfs;

/**
 * How the simulated NFS clients behave. The first four are the knobs of a correct client (lifetimes as
 * {@code acregmax}/{@code acdirmax} and {@code lookupcache=all} set them); the last two break close-to-open
 * consistency on purpose, to prove that the checker catches what the store relies on.
 *
 * @param attributeLifetime µs a client trusts cached attributes (size, mode) of a file it has open
 * @param entryLifetime     µs a client trusts a cached directory entry, positive or negative, on a path lookup
 * @param negativeEntries   whether a failed lookup is cached as a negative entry ({@code lookupcache=all})
 * @param writebackChance   chance that a write sends a part of the dirty data to the server at once, before the
 *                          flush (the kernel writes pages back when it likes: other clients can see a torn frame)
 * @param root              whether the processes run as root (root ignores mode bits; tests and CI do)
 * @param listFromCache     BROKEN: listing a directory returns the client's cached listing while it is younger than
 *                          {@code entryLifetime}, instead of revalidating the directory
 * @param sizeFromCache     BROKEN: opening a file does not revalidate its attributes; its size comes from the cache
 *                          while younger than {@code attributeLifetime}
 */
public record NfsModel(long attributeLifetime, long entryLifetime, boolean negativeEntries, double writebackChance,
        boolean root, boolean listFromCache, boolean sizeFromCache) {

    /** Whether this model keeps close-to-open consistency, as real clients do. */
    public boolean correct() {
        return !listFromCache && !sizeFromCache;
    }

    public NfsModel withListFromCache() {
        return new NfsModel(attributeLifetime, entryLifetime, negativeEntries, writebackChance, root, true, false);
    }

    public NfsModel withSizeFromCache() {
        return new NfsModel(attributeLifetime, entryLifetime, negativeEntries, writebackChance, root, false, true);
    }
}
