/**
 * What the remote client ({@code org.leasehold.remote}) and the lease server share: the wire protocol
 * ({@code leasehold/v1/leasehold.proto}, generated into {@code org.leasehold.wire.proto}) and its constants
 * ({@link org.leasehold.wire.Protocol}), the conversion between its messages and the API's values
 * ({@link org.leasehold.wire.ProtoCodec}), how both ends batch a session stream ({@link org.leasehold.wire.Batches}),
 * the socket transport's framing ({@link org.leasehold.wire.WireFrames}), TLS ({@link org.leasehold.wire.SocketTls})
 * and active wait ({@link org.leasehold.wire.SpinWait}). It depends on the API and {@code time} only; both ends
 * read durations written as text with {@link org.leasehold.config.Check#duration}.
 */
package org.leasehold.wire;
