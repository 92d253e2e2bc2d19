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

    private Protocol() {
    }
}
