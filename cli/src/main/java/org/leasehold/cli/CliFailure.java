package org.leasehold.cli;

/**
 * A command could not do its work for a reason outside the arguments (a store that cannot be read, a server that does
 * not answer): reported as one line on standard error, exit code 1. The message says what failed and what to do.
 */
final class CliFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;

    CliFailure(String message) {
        super(message);
    }

    CliFailure(String message, Throwable cause) {
        super(message, cause);
    }
}
