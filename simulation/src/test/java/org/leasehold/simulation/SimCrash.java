package org.leasehold.simulation;

/**
 * Thrown into the code a fiber was running when its machine crashed: it unwinds everything, like the end of a
 * process. An {@link Error}, so that the store's handlers of I/O and store exceptions do not take it for a failure
 * they could handle.
 */
final class SimCrash extends Error {
    private static final long serialVersionUID = 1L;

    SimCrash() {
        super("the simulated machine crashed", null, false, false);
    }
}
