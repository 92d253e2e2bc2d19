package org.leasehold.simulation.nfs;

import java.util.SplittableRandom;

/** What a simulated NFS client needs from the machine it runs on. */
public interface NfsHost {

    /**
     * One call to the server (or a flush): takes simulated time, during which other machines run. Throws the
     * machine's crash if it crashed meanwhile.
     */
    void step(String op, String path);

    /** True time, µs: cache lifetimes are measured in it. */
    long now();

    /** The simulation's seeded randomness. */
    SplittableRandom random();

    /** The error that ends a crashed machine's code at its next call. */
    Error crashed();

    /** Records an operation outside the NFS-safe list (invariant 8). */
    void refused(String what);
}
