package org.leasehold.wire;

import java.nio.file.Path;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;

import io.grpc.netty.shaded.io.netty.handler.ssl.JdkSslContext;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContext;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslProvider;

/**
 * TLS for the socket transport from the same PEM files as gRPC's: Netty's builder reads them (certificate chains,
 * PKCS#8 keys) into a JDK {@link SSLContext}, whose socket factories the transport uses.
 */
public final class SocketTls {
    private SocketTls() {
    }

    /** The server's context: its certificate and key, and the CA(s) of client certificates (or null). */
    public static SSLContext serverContext(Path cert, Path key, Path clientCa) throws SSLException {
        SslContextBuilder b = SslContextBuilder.forServer(cert.toFile(), key.toFile()).sslProvider(SslProvider.JDK);
        if (clientCa != null) {
            b.trustManager(clientCa.toFile());
        }
        return jdk(b.build());
    }

    /** The client's context: the CA(s) it trusts, and its own certificate and key (or null). */
    public static SSLContext clientContext(Path trust, Path cert, Path key) throws SSLException {
        SslContextBuilder b = SslContextBuilder.forClient().sslProvider(SslProvider.JDK).trustManager(trust.toFile());
        if (cert != null) {
            b.keyManager(cert.toFile(), key.toFile());
        }
        return jdk(b.build());
    }

    private static SSLContext jdk(SslContext ctx) {
        return ((JdkSslContext) ctx).context();
    }
}
