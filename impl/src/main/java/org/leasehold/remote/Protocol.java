package org.leasehold.remote;

import io.grpc.Metadata;

/** Constants of the wire protocol shared by the client and the server. */
public final class Protocol {
    /** The protocol version this code speaks. */
    public static final int VERSION = 1;

    /** The metadata header carrying the protocol version on every call. */
    public static final Metadata.Key<String> VERSION_HEADER =
            Metadata.Key.of("leasehold-protocol", Metadata.ASCII_STRING_MARSHALLER);

    /** The standard bearer-token header ({@code authorization: Bearer <token>}). */
    public static final Metadata.Key<String> AUTHORIZATION =
            Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

    /**
     * The most a sender puts into one session message (a batch of requests or answers) by joining several; a single
     * request or answer larger than this goes alone. Below the smallest message limit either side accepts (64 KiB).
     */
    public static final int BATCH_BYTES = 32 * 1024;

    /** The smallest inbound message limit either side may be configured with. */
    public static final int MIN_MESSAGE_LIMIT = 64 * 1024;

    private Protocol() {
    }
}
