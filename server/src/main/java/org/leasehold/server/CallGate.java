package org.leasehold.server;

import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import javax.naming.InvalidNameException;
import javax.naming.ldap.LdapName;
import javax.naming.ldap.Rdn;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;

import io.grpc.Attributes;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServerTransportFilter;
import io.grpc.Status;

import org.leasehold.wire.Protocol;

/**
 * The door every call passes: checks the protocol version, authenticates the caller (bearer token or client
 * certificate) and tags the call with its principal and its connection. Refusals are answered at once with a status
 * that says what is wrong and how to fix it.
 */
final class CallGate implements ServerInterceptor {
    private static final System.Logger LOG = System.getLogger(CallGate.class.getName());

    static final Context.Key<String> PRINCIPAL = Context.key("leasehold-principal");
    static final Context.Key<Connection> CONNECTION = Context.key("leasehold-connection");
    static final String ANONYMOUS = "anonymous";

    private static final Attributes.Key<Connection> CONNECTION_ATTR = Attributes.Key.create("leasehold-connection");
    private static final String BEARER = "Bearer ";

    private final Credentials tokens;
    private final boolean clientCertificates;
    private final ServerMetrics metrics;

    /** One client connection and the waiting acquisitions it has open. */
    static final class Connection {
        final long id;
        final String remote;
        final AtomicInteger waiting = new AtomicInteger();

        Connection(long id, String remote) {
            this.id = id;
            this.remote = remote;
        }
    }

    CallGate(Credentials tokens, boolean clientCertificates, ServerMetrics metrics) {
        this.tokens = tokens;
        this.clientCertificates = clientCertificates;
        this.metrics = metrics;
    }

    /** Tags each connection as it is established, and counts connections. */
    ServerTransportFilter transportFilter() {
        AtomicLong ids = new AtomicLong();
        return new ServerTransportFilter() {
            @Override
            public Attributes transportReady(Attributes attrs) {
                Object remote = attrs.get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR);
                metrics.connections.inc();
                return attrs.toBuilder().set(CONNECTION_ATTR, new Connection(ids.incrementAndGet(), String.valueOf(remote)))
                        .build();
            }

            @Override
            public void transportTerminated(Attributes attrs) {
                if (attrs != null && attrs.get(CONNECTION_ATTR) != null) {
                    metrics.connections.dec();
                }
            }
        };
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
            ServerCallHandler<Q, R> next) {
        String version = headers.get(Protocol.VERSION_HEADER);
        if (version == null || !version.equals(Integer.toString(Protocol.VERSION))) {
            metrics.refused.labelValues("protocol_version").inc();
            call.close(Status.FAILED_PRECONDITION.withDescription("this lease server speaks Leasehold protocol version "
                    + Protocol.VERSION + "; the call " + (version == null ? "sent no 'leasehold-protocol' header"
                    : "asked for version '" + version + "'") + ": use a Leasehold client of a matching version"),
                    new Metadata());
            return new ServerCall.Listener<>() { };
        }
        String principal = authenticate(call, headers);
        if (principal == null) {
            metrics.refused.labelValues("unauthenticated").inc();
            LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-2101 unauthenticated call to {0} from {1}",
                    call.getMethodDescriptor().getFullMethodName(), call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR));
            call.close(Status.UNAUTHENTICATED.withDescription("no valid credentials: send 'authorization: Bearer <token>' "
                    + "with a token listed in the server's token file" + (clientCertificates
                    ? ", or a client certificate signed by the server's client CA" : "")), new Metadata());
            return new ServerCall.Listener<>() { };
        }
        Context ctx = Context.current().withValues(PRINCIPAL, principal, CONNECTION,
                call.getAttributes().get(CONNECTION_ATTR));
        ServerCall.Listener<Q> listener = Contexts.interceptCall(ctx, call, headers, next);
        return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(listener) {
            private boolean rejected;

            @Override
            public void onMessage(Q message) {
                if (rejected) {
                    return;
                }
                if (message == null) {
                    rejected = true;
                    metrics.refused.labelValues("malformed").inc();
                    String type = call.getMethodDescriptor().getRequestMarshaller() instanceof Lenient<?> l ? l.type : "?";
                    call.close(Status.INVALID_ARGUMENT.withDescription("the request is not a valid " + type
                            + " message (" + Lenient.LAST_ERROR.get() + "); nothing was done"), new Metadata());
                    return;
                }
                super.onMessage(message);
            }

            @Override
            public void onHalfClose() {
                if (!rejected) {
                    super.onHalfClose();
                }
            }

            @Override
            public void onReady() {
                if (!rejected) {
                    super.onReady();
                }
            }
        };
    }

    /**
     * The service with request parsers that do not throw: a request that is not a valid protobuf message becomes
     * {@code null}, which {@link #interceptCall} answers with INVALID_ARGUMENT (gRPC itself would answer UNKNOWN).
     */
    static ServerServiceDefinition lenient(ServerServiceDefinition service) {
        ServerServiceDefinition.Builder b = ServerServiceDefinition.builder(service.getServiceDescriptor().getName());
        for (ServerMethodDefinition<?, ?> m : service.getMethods()) {
            b.addMethod(lenient(m));
        }
        return b.build();
    }

    private static <Q, R> ServerMethodDefinition<Q, R> lenient(ServerMethodDefinition<Q, R> m) {
        MethodDescriptor<Q, R> md = m.getMethodDescriptor();
        String type = md.getRequestMarshaller() instanceof MethodDescriptor.PrototypeMarshaller<?> p
                && p.getMessagePrototype() instanceof com.google.protobuf.Message msg
                ? msg.getDescriptorForType().getFullName() : md.getFullMethodName() + " request";
        return ServerMethodDefinition.create(md.toBuilder().setRequestMarshaller(new Lenient<>(md.getRequestMarshaller(),
                type)).build(), m.getServerCallHandler());
    }

    /** Parses like the given marshaller, but answers null (remembering why) instead of throwing. */
    static final class Lenient<T> implements MethodDescriptor.Marshaller<T> {
        static final ThreadLocal<String> LAST_ERROR = new ThreadLocal<>();
        private final MethodDescriptor.Marshaller<T> delegate;
        final String type;

        Lenient(MethodDescriptor.Marshaller<T> delegate, String type) {
            this.delegate = delegate;
            this.type = type;
        }

        @Override
        public java.io.InputStream stream(T value) {
            return delegate.stream(value);
        }

        @Override
        public T parse(java.io.InputStream stream) {
            try {
                return delegate.parse(stream);
            } catch (RuntimeException e) {
                LAST_ERROR.set(e.getMessage());
                return null;
            }
        }
    }

    /** The caller's principal, or null if it must be refused. */
    private String authenticate(ServerCall<?, ?> call, Metadata headers) {
        if (tokens == null && !clientCertificates) {
            return ANONYMOUS;
        }
        if (clientCertificates) {
            String cn = certificateName(call.getAttributes().get(Grpc.TRANSPORT_ATTR_SSL_SESSION));
            if (cn != null) {
                return cn;
            }
        }
        if (tokens != null) {
            String auth = headers.get(Protocol.AUTHORIZATION);
            // The scheme's name is case-insensitive (RFC 7235, section 2.1): "bearer" and "BEARER" are "Bearer".
            if (auth != null && auth.regionMatches(true, 0, BEARER, 0, BEARER.length())) {
                return tokens.principalOf(auth.substring(BEARER.length()).strip());
            }
        }
        return null;
    }

    /** The common name of a verified client certificate, or null. */
    static String certificateName(SSLSession session) {
        if (session == null) {
            return null;
        }
        try {
            Certificate[] chain = session.getPeerCertificates();
            if (chain.length == 0 || !(chain[0] instanceof X509Certificate x)) {
                return null;
            }
            for (Rdn rdn : new LdapName(x.getSubjectX500Principal().getName()).getRdns()) {
                if (rdn.getType().equalsIgnoreCase("CN")) {
                    return rdn.getValue().toString();
                }
            }
            return x.getSubjectX500Principal().getName();
        } catch (SSLPeerUnverifiedException | InvalidNameException e) {
            return null;
        }
    }
}
