package org.leasehold.wire;

import java.time.Duration;

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

    /**
     * The socket transport: a client that has sent nothing on a connection for this long sends an echo, so that the
     * server can tell a live idle client from a vanished one.
     */
    public static final Duration SOCKET_KEEPALIVE = Duration.ofSeconds(15);

    /** The socket transport: a server closes a connection on which nothing arrived for this long (4 keep-alives). */
    public static final Duration SOCKET_IDLE_TIMEOUT = SOCKET_KEEPALIVE.multipliedBy(4);

    private Protocol() {
    }
}
