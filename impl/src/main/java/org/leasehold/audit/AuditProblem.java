package org.leasehold.audit;

/**
 * One thing wrong with a signed statement, as {@link AuditVerifier} reports it.
 *
 * @param kind    what is wrong
 * @param message what happened, to which statement, and what it means
 */
public record AuditProblem(Kind kind, String message) {

    /** What is wrong. */
    public enum Kind {
        /** The proof names a key the key set does not hold. */
        UNKNOWN_KEY,
        /** The statement names another key than its proof. */
        KEY_MISMATCH,
        /**
         * The signature does not cover the root that the statement and its path give: the statement, the path or the
         * signature was changed (or made by another key).
         */
        BAD_SIGNATURE,
        /** The path's length does not fit the leaf index and count it states. */
        BAD_PATH,
        /** The statement's signed time lies outside its key's validity. */
        KEY_NOT_VALID,
        /** The statement's signed time lies at or after its key's revocation. */
        KEY_REVOKED,
        /** The statement names another lease service than its key was published for. */
        SERVICE_MISMATCH
    }

    @Override
    public String toString() {
        return kind + ": " + message;
    }
}
