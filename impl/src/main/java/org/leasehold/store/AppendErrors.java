package org.leasehold.store;

import java.io.IOException;

import org.leasehold.bag.BucketSealedException;
import org.leasehold.bag.StoreUnavailableException;
import org.leasehold.bag.WriteOutcomeUnknownException;
import org.leasehold.time.Micros;

/** The committer's refusals, worded once: what happened to which append in which bucket, and what to do. */
final class AppendErrors {
    private AppendErrors() {
    }

    static String where(LogHandle log, long bucket) {
        return "bucket " + log.bucketPath(bucket) + " of log '" + log.name() + "'";
    }

    static BucketSealedException sealedBefore(LogHandle log, long bucket) {
        return new BucketSealedException(BucketSealedException.Reason.SEALED, log.name(), log.bucketPath(bucket),
                Micros.toInstant(bucket), where(log, bucket) + " is sealed (or sealing began) before this append was "
                        + "written; nothing was written. Append again with a current timestamp");
    }

    static StoreUnavailableException cannotWrite(LogHandle log, long bucket, IOException e) {
        return new StoreUnavailableException("cannot write to " + where(log, bucket) + " under " + log.dir() + ": "
                + IoErrors.describe(e) + "; nothing was written. " + capitalize(IoErrors.advice(e)), e);
    }

    static StoreUnavailableException notWritten(LogHandle log, PendingAppend p, IOException e) {
        return new StoreUnavailableException("writing the append to " + p.file.name + " in " + where(log, p.bucket)
                + " failed (" + IoErrors.describe(e) + "); it was not (completely) written, and readers drop the "
                + "partial frame as a torn tail, so it will never be readable. " + capitalize(IoErrors.advice(e)), e);
    }

    static WriteOutcomeUnknownException outcomeUnknown(LogHandle log, PendingAppend p, IOException e) {
        return new WriteOutcomeUnknownException("the append was written to " + p.file.name + " at offset " + p.offset
                + " in " + where(log, p.bucket) + " but flushing it failed (" + IoErrors.describe(e) + "); it may or "
                + "may not be readable, now or after a crash. Read the bucket once it is sealed to find out; "
                + IoErrors.advice(e), e);
    }

    private static String capitalize(String s) {
        return s.isEmpty() ? s : Character.toUpperCase(s.charAt(0)) + s.substring(1);
    }
}
