package org.leasehold.samples.ledger.app;

/** A benchmark resource is not defined in this server: only the runner's benchmark mode creates it. */
public class BenchNotConfiguredException extends Exception {
    private static final long serialVersionUID = 1L;

    public BenchNotConfiguredException(String message) {
        super(message);
    }
}
