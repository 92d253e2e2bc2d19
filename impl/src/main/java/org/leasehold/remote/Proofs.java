package org.leasehold.remote;

import org.leasehold.wire.proto.SessionRequest;

/**
 * Whether a session request asks the server to push the proofs of its answer's witnesses ({@code wants_seals}). A
 * server that signs on request ({@code proofs_on_request}) signs a grant's or renewal's witness only when asked, so
 * an acquisition or renewal leaves the proofs to be asked for when somebody wants one (most leases end with no
 * message written under them); an upgrade asks for them at once, since its transaction writes under it within the
 * commit. A server of an earlier release signs every witness and pushes only what was asked: there every request that
 * answers with a lease asks.
 */
enum Proofs {
    /** The request answers with no lease (release, withdraw, echo...). */
    NONE,
    /** Pushed by a server of an earlier release; asked for when wanted from one that signs on request. */
    ON_REQUEST,
    /** Always pushed (an upgrade's). */
    PUSHED;

    /** What {@code request}, about to be sent on a session with the server, asks. */
    static Proofs of(SessionRequest.Builder request) {
        if (request.hasUpgrade()) {
            return PUSHED;
        }
        return request.hasAcquire() || request.hasRenew() ? ON_REQUEST : NONE;
    }

    /** {@code request} with {@code wants_seals} set as this asks, for a server that does or does not sign on request. */
    SessionRequest.Builder wanted(SessionRequest.Builder request, boolean serverSignsOnRequest) {
        return switch (this) {
            case NONE -> request;
            case ON_REQUEST -> request.setWantsSeals(!serverSignsOnRequest);
            case PUSHED -> request.setWantsSeals(true);
        };
    }
}
