package org.leasehold.bag;

import java.time.Instant;

/**
 * The result of reading a view: the state of the latest readable snapshot with the messages after its boundary
 * applied.
 *
 * @param <S>          the view's state
 * @param state        the state
 * @param boundary     the boundary of the snapshot the read started from (every message before it is in the
 *                     snapshot), or null if it folded the log from the beginning
 * @param tailMessages how many messages were applied after the snapshot
 * @param tentative    true if a message from a bucket that was not sealed was applied: the state may still change
 *                     before that bucket seals (messages that sort before ones applied may join it)
 */
public record ViewState<S>(S state, Instant boundary, long tailMessages, boolean tentative) {
}
