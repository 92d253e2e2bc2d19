package org.leasehold.bag;

import java.util.Set;

/**
 * A materialized view: an application-defined fold over the messages of a log, in read order, whose state the store
 * keeps in snapshots as of sealed boundaries so that a reader starts from the latest snapshot instead of the
 * beginning of the log.
 *
 * <p>The fold must be a function of the messages only: the same messages in the same order give the same state, and
 * {@link #encode} gives the same bytes for the same state (iterate sorted collections, not hash orders; no clocks, no
 * random numbers). Two processes building the same snapshot must write identical bytes; a builder that finds
 * different bytes published refuses with {@link ViewEncodingException}. {@link #decode} must invert {@link #encode}:
 * folding from a decoded snapshot must give what folding from the beginning gives.
 *
 * @param <S> the state; {@link #apply} may return a new state or the one it was given, changed
 */
public interface ViewDefinition<S> {

    /**
     * The view's name, unique per log: 1 to 64 characters among {@code a-z A-Z 0-9 . _ -}, not starting with a dot.
     * Snapshots are stored under it.
     */
    String name();

    /**
     * The version of the fold and of its encoding. Change it whenever {@link #apply}, {@link #encode} or
     * {@link #decode} change meaning: snapshots are stored per version (by a digest of this string), so a new version
     * starts from a full fold and never reads an old version's bytes.
     */
    String version();

    /** The state before any message. */
    S initial();

    /** The state after {@code message}; must not keep the message (its payload buffer may be shared). */
    S apply(S state, Message message);

    /** The state's bytes; deterministic. */
    byte[] encode(S state);

    /**
     * The state {@link #encode} encoded.
     *
     * @throws RuntimeException the bytes are not a state of this version (the snapshot is then treated as damaged)
     */
    S decode(byte[] bytes);

    /**
     * Only messages written under at least one of these lease names are folded; empty (the default) for every
     * message of the log.
     */
    default Set<String> leaseNames() {
        return Set.of();
    }
}
