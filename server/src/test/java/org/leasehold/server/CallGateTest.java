package org.leasehold.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.lang.reflect.Proxy;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.PublicKey;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.List;

import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;

import io.grpc.Attributes;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServerTransportFilter;
import io.grpc.Status;

import org.junit.jupiter.api.Test;
import org.leasehold.wire.Protocol;
import org.leasehold.wire.proto.InfoReply;
import org.leasehold.wire.proto.InfoRequest;
import org.leasehold.wire.proto.LeaseholdGrpc;

/**
 * The door every call passes, driven call by call: the protocol version, each way to authenticate (none configured,
 * a bearer token, a client certificate, both) and each way to fail it, the status and words of each refusal, the
 * refusal of a request that is not a valid message (and that nothing of it reaches the service), and the connections
 * it counts. Each refusal is counted by its reason.
 */
class CallGateTest {
    private static final String TOKEN = "billing-token-0123456789abcdef";
    private static final String NEEDS_TOKEN = "no valid credentials: send 'authorization: Bearer <token>' with a token "
            + "listed in the server's token file";
    private static final String OR_CERTIFICATE = ", or a client certificate signed by the server's client CA";

    private final Path dir = Path.of("target", "call-gate-" + System.nanoTime());
    private final ServerMetrics metrics = new ServerMetrics();

    /** A call as the transport hands it to the gate; remembers how it was closed. */
    private static final class Call extends ServerCall<InfoRequest, InfoReply> {
        private final MethodDescriptor<InfoRequest, InfoReply> method;
        private final Attributes attrs;
        Status closed;

        Call(MethodDescriptor<InfoRequest, InfoReply> method, Attributes attrs) {
            this.method = method;
            this.attrs = attrs;
        }

        @Override
        public void request(int n) {
        }

        @Override
        public void sendHeaders(Metadata headers) {
        }

        @Override
        public void sendMessage(InfoReply message) {
        }

        @Override
        public void close(Status status, Metadata trailers) {
            closed = status;
        }

        @Override
        public boolean isCancelled() {
            return false;
        }

        @Override
        public MethodDescriptor<InfoRequest, InfoReply> getMethodDescriptor() {
            return method;
        }

        @Override
        public Attributes getAttributes() {
            return attrs;
        }
    }

    /** The service behind the gate: who the call came from, and what reached it. */
    private static final class Service implements ServerCallHandler<InfoRequest, InfoReply> {
        String principal;
        CallGate.Connection connection;
        final List<String> reached = new ArrayList<>();

        @Override
        public ServerCall.Listener<InfoRequest> startCall(ServerCall<InfoRequest, InfoReply> call, Metadata headers) {
            principal = CallGate.PRINCIPAL.get();
            connection = CallGate.CONNECTION.get();
            reached.add("start");
            return new ServerCall.Listener<>() {
                @Override
                public void onMessage(InfoRequest message) {
                    reached.add("message");
                }

                @Override
                public void onHalfClose() {
                    reached.add("halfClose");
                }

                @Override
                public void onReady() {
                    reached.add("ready");
                }
            };
        }
    }

    private static MethodDescriptor<InfoRequest, InfoReply> lenientInfo() {
        ServerServiceDefinition s = CallGate.lenient(new LeaseholdGrpc.LeaseholdImplBase() { }.bindService());
        @SuppressWarnings("unchecked")
        ServerMethodDefinition<InfoRequest, InfoReply> m = (ServerMethodDefinition<InfoRequest, InfoReply>) s
                .getMethod(LeaseholdGrpc.getInfoMethod().getFullMethodName());
        return m.getMethodDescriptor();
    }

    private static Metadata headers(String version, String authorization) {
        Metadata h = new Metadata();
        if (version != null) {
            h.put(Protocol.VERSION_HEADER, version);
        }
        if (authorization != null) {
            h.put(Protocol.AUTHORIZATION, authorization);
        }
        return h;
    }

    private Credentials tokens() throws Exception {
        Files.createDirectories(dir);
        return Credentials.read(Files.writeString(dir.resolve("tokens"), "billing " + TOKEN + "\n"));
    }

    private double refused(String reason) {
        return metrics.refused.labelValues(reason).get();
    }

    /**
     * Passes {@code call} through {@code gate} to a {@link Service}, then sends it a request; a refused call is
     * answered with a listener that takes the request and does nothing with it.
     */
    private static Service pass(CallGate gate, Call call, Metadata headers) {
        Service s = new Service();
        ServerCall.Listener<InfoRequest> l = gate.interceptCall(call, headers, s);
        assertNotNull(l);
        l.onMessage(InfoRequest.getDefaultInstance());
        l.onHalfClose();
        return s;
    }

    private static SSLSession session(Certificate... chain) {
        return (SSLSession) Proxy.newProxyInstance(CallGateTest.class.getClassLoader(), new Class<?>[] {SSLSession.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("getPeerCertificates")) {
                        if (chain == null) {
                            throw new SSLPeerUnverifiedException("no client certificate");
                        }
                        return chain;
                    }
                    throw new UnsupportedOperationException(method.getName());
                });
    }

    private static Attributes withSession(SSLSession s) {
        return Attributes.newBuilder().set(Grpc.TRANSPORT_ATTR_SSL_SESSION, s).build();
    }

    @Test
    void aCallWithoutTheProtocolHeaderOrWithAnotherVersionIsRefusedBeforeAnythingElse() throws Exception {
        CallGate gate = new CallGate(tokens(), false, metrics);
        Call none = new Call(lenientInfo(), Attributes.EMPTY);
        Service s = pass(gate, none, headers(null, "Bearer " + TOKEN));
        assertEquals(Status.Code.FAILED_PRECONDITION, none.closed.getCode());
        assertEquals("this lease server speaks Leasehold protocol version 1; the call sent no 'leasehold-protocol' "
                + "header: use a Leasehold client of a matching version", none.closed.getDescription());
        assertTrue(s.reached.isEmpty());
        Call other = new Call(lenientInfo(), Attributes.EMPTY);
        s = pass(gate, other, headers("2", "Bearer " + TOKEN));
        assertEquals(Status.Code.FAILED_PRECONDITION, other.closed.getCode());
        assertEquals("this lease server speaks Leasehold protocol version 1; the call asked for version '2': use a "
                + "Leasehold client of a matching version", other.closed.getDescription());
        assertTrue(s.reached.isEmpty());
        // Refused on the version even without credentials: the unauthenticated count stays at zero.
        pass(gate, new Call(lenientInfo(), Attributes.EMPTY), headers("0", null));
        assertEquals(3, refused("protocol_version"));
        assertEquals(0, refused("unauthenticated"));
    }

    @Test
    void withoutTokensOrCertificatesEveryCallerIsAnonymous() {
        CallGate gate = new CallGate(null, false, metrics);
        Call call = new Call(lenientInfo(), Attributes.EMPTY);
        Service s = pass(gate, call, headers("1", "Bearer whatever-it-says-0123456789"));
        assertNull(call.closed);
        assertEquals(CallGate.ANONYMOUS, s.principal);
        assertEquals(List.of("start", "message", "halfClose"), s.reached);
    }

    @Test
    void aBearerTokenFromTheFileAuthenticatesItsPrincipalAndAnythingElseIsRefused() throws Exception {
        CallGate gate = new CallGate(tokens(), false, metrics);
        Call ok = new Call(lenientInfo(), Attributes.EMPTY);
        assertEquals("billing", pass(gate, ok, headers("1", "Bearer " + TOKEN)).principal);
        assertNull(ok.closed);
        assertEquals("billing", pass(gate, new Call(lenientInfo(), Attributes.EMPTY), headers("1", "Bearer  " + TOKEN
                + " ")).principal, "spaces around the token are not part of it");
        for (String scheme : List.of("bearer ", "BEARER ", "bEaReR ")) {
            assertEquals("billing", pass(gate, new Call(lenientInfo(), Attributes.EMPTY), headers("1", scheme + TOKEN))
                    .principal, "the scheme's name in any case: " + scheme);
        }
        List<String> refusedAuth = new ArrayList<>();
        refusedAuth.add(null);
        refusedAuth.addAll(List.of("Basic " + TOKEN, TOKEN, "Bearer " + TOKEN + "x", "Bearer ", "Bearer",
                "Bearer" + TOKEN, "bearer " + TOKEN.toUpperCase(java.util.Locale.ROOT)));
        for (String auth : refusedAuth) {
            Call call = new Call(lenientInfo(), Attributes.EMPTY);
            Service s = pass(gate, call, headers("1", auth));
            assertNotNull(call.closed, String.valueOf(auth));
            assertEquals(Status.Code.UNAUTHENTICATED, call.closed.getCode(), auth);
            assertEquals(NEEDS_TOKEN, call.closed.getDescription(), auth);
            assertTrue(s.reached.isEmpty(), auth);
        }
        assertEquals(refusedAuth.size(), refused("unauthenticated"));
        assertEquals(0, refused("protocol_version"));
    }

    @Test
    void aClientCertificateAuthenticatesByItsCommonNameAndComesBeforeAToken() throws Exception {
        TestCertificates.Issued ca = TestCertificates.authority(dir, "gate-ca");
        X509Certificate ops = TestCertificates.client(dir, "ops", ca).certificate();
        CallGate both = new CallGate(tokens(), true, metrics);
        assertEquals("ops", pass(both, new Call(lenientInfo(), withSession(session(ops))),
                headers("1", "Bearer " + TOKEN)).principal);
        assertEquals("billing", pass(both, new Call(lenientInfo(), withSession(session((Certificate[]) null))),
                headers("1", "Bearer " + TOKEN)).principal, "no certificate: the token");
        assertEquals("billing", pass(both, new Call(lenientInfo(), Attributes.EMPTY),
                headers("1", "Bearer " + TOKEN)).principal, "no TLS: the token");
        Call neither = new Call(lenientInfo(), Attributes.EMPTY);
        pass(both, neither, headers("1", null));
        assertEquals(Status.Code.UNAUTHENTICATED, neither.closed.getCode());
        assertEquals(NEEDS_TOKEN + OR_CERTIFICATE, neither.closed.getDescription());

        CallGate certificatesOnly = new CallGate(null, true, metrics);
        assertEquals("ops", pass(certificatesOnly, new Call(lenientInfo(), withSession(session(ops))),
                headers("1", null)).principal);
        Call tokenOnly = new Call(lenientInfo(), Attributes.EMPTY);
        Service s = pass(certificatesOnly, tokenOnly, headers("1", "Bearer " + TOKEN));
        assertEquals(Status.Code.UNAUTHENTICATED, tokenOnly.closed.getCode(), "no token file: a token is nothing");
        assertEquals(NEEDS_TOKEN + OR_CERTIFICATE, tokenOnly.closed.getDescription());
        assertTrue(s.reached.isEmpty());

        // A server that does not ask for client certificates ignores one: the token decides.
        CallGate tokensOnly = new CallGate(tokens(), false, metrics);
        assertEquals("billing", pass(tokensOnly, new Call(lenientInfo(), withSession(session(ops))),
                headers("1", "Bearer " + TOKEN)).principal);
        Call certificateOnly = new Call(lenientInfo(), withSession(session(ops)));
        pass(tokensOnly, certificateOnly, headers("1", null));
        assertEquals(NEEDS_TOKEN, certificateOnly.closed.getDescription());
        assertEquals(3, refused("unauthenticated"));
    }

    @Test
    void theNameOfACertificateIsItsCommonNameOrElseItsWholeSubject() throws Exception {
        TestCertificates.Issued ca = TestCertificates.authority(dir, "names-ca");
        assertEquals("billing", CallGate.certificateName(session(TestCertificates.client(dir, "billing", ca)
                .certificate())));
        X509Certificate nameless = TestCertificates.selfSigned("O=Acme,C=DE");
        assertEquals(nameless.getSubjectX500Principal().getName(), CallGate.certificateName(session(nameless)));
        assertTrue(CallGate.certificateName(session(nameless)).contains("O=Acme"));
        assertEquals("ops", CallGate.certificateName(session(TestCertificates.selfSigned("O=Acme,CN=ops"))));
        assertNull(CallGate.certificateName(null));
        assertNull(CallGate.certificateName(session((Certificate[]) null)), "unverified peer");
        assertNull(CallGate.certificateName(session()), "empty chain");
        assertNull(CallGate.certificateName(session(new NotX509())));
    }

    /** A certificate of a type other than X.509. */
    private static final class NotX509 extends Certificate {
        private static final long serialVersionUID = 1L;

        NotX509() {
            super("other");
        }

        @Override
        public byte[] getEncoded() {
            return new byte[0];
        }

        @Override
        public void verify(PublicKey key) {
        }

        @Override
        public void verify(PublicKey key, String sigProvider) {
        }

        @Override
        public String toString() {
            return "other";
        }

        @Override
        public PublicKey getPublicKey() {
            return null;
        }
    }

    @Test
    void aRequestThatIsNotAValidMessageIsRefusedAndNothingOfItReachesTheService() throws Exception {
        CallGate gate = new CallGate(tokens(), false, metrics);
        MethodDescriptor<InfoRequest, InfoReply> info = lenientInfo();
        assertNull(info.parseRequest(new ByteArrayInputStream(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, 0x0f,
            0x01})));
        String why = CallGate.Lenient.LAST_ERROR.get();
        assertNotNull(why);
        Call call = new Call(info, Attributes.EMPTY);
        Service s = new Service();
        ServerCall.Listener<InfoRequest> l = gate.interceptCall(call, headers("1", "Bearer " + TOKEN), s);
        l.onMessage(null);
        assertEquals(Status.Code.INVALID_ARGUMENT, call.closed.getCode());
        assertEquals("the request is not a valid leasehold.v1.InfoRequest message (" + why + "); nothing was done",
                call.closed.getDescription());
        l.onMessage(InfoRequest.getDefaultInstance());
        l.onHalfClose();
        l.onReady();
        assertEquals(List.of("start"), s.reached, "nothing after the refusal reaches the service");
        assertEquals(1, refused("malformed"));

        // A valid request passes whole.
        Call good = new Call(info, Attributes.EMPTY);
        Service t = new Service();
        ServerCall.Listener<InfoRequest> g = gate.interceptCall(good, headers("1", "Bearer " + TOKEN), t);
        g.onMessage(InfoRequest.getDefaultInstance());
        g.onHalfClose();
        g.onReady();
        assertNull(good.closed);
        assertEquals(List.of("start", "message", "halfClose", "ready"), t.reached);
        // Answers are written as the service's own marshaller writes them.
        InfoRequest sent = InfoRequest.getDefaultInstance();
        assertArrayEquals(sent.toByteArray(), info.streamRequest(sent).readAllBytes());
        assertEquals(sent, info.parseRequest(info.streamRequest(sent)));
        assertEquals(1, refused("malformed"));
    }

    @Test
    void aMethodWhoseRequestsAreNotProtobufMessagesIsNamedByItsFullName() throws Exception {
        MethodDescriptor.Marshaller<byte[]> raw = new MethodDescriptor.Marshaller<>() {
            @Override
            public InputStream stream(byte[] value) {
                return new ByteArrayInputStream(value);
            }

            @Override
            public byte[] parse(InputStream stream) {
                throw new IllegalStateException("not today");
            }
        };
        MethodDescriptor<byte[], byte[]> md = MethodDescriptor.<byte[], byte[]>newBuilder().setType(
                MethodDescriptor.MethodType.UNARY).setFullMethodName("test.Raw/Call").setRequestMarshaller(raw)
                .setResponseMarshaller(raw).build();
        ServerServiceDefinition s = CallGate.lenient(ServerServiceDefinition.builder("test.Raw")
                .addMethod(md, (call, headers) -> new ServerCall.Listener<>() { }).build());
        MethodDescriptor.Marshaller<?> m = s.getMethod("test.Raw/Call").getMethodDescriptor().getRequestMarshaller();
        CallGate.Lenient<?> lenient = assertInstanceOf(CallGate.Lenient.class, m);
        assertEquals("test.Raw/Call request", lenient.type);
        assertNull(m.parse(new ByteArrayInputStream(new byte[1])));
        assertEquals("not today", CallGate.Lenient.LAST_ERROR.get());
        // A call whose method was not made lenient names no type.
        CallGate gate = new CallGate(null, false, metrics);
        Call call = new Call(LeaseholdGrpc.getInfoMethod(), Attributes.EMPTY);
        gate.interceptCall(call, headers("1", null), new Service()).onMessage(null);
        assertTrue(call.closed.getDescription().startsWith("the request is not a valid ? message ("),
                call.closed.getDescription());
    }

    @Test
    void eachConnectionIsTaggedWithItsOwnIdAndCountedWhileOpen() throws Exception {
        CallGate gate = new CallGate(null, false, metrics);
        ServerTransportFilter f = gate.transportFilter();
        InetSocketAddress remote = new InetSocketAddress("127.0.0.1", 40_001);
        Attributes a = f.transportReady(Attributes.newBuilder().set(Grpc.TRANSPORT_ATTR_REMOTE_ADDR, remote).build());
        Attributes b = f.transportReady(Attributes.EMPTY);
        assertEquals(2, metrics.connections.get());
        Service s = pass(gate, new Call(lenientInfo(), a), headers("1", null));
        assertEquals(1, s.connection.id);
        assertEquals(remote.toString(), s.connection.remote);
        assertEquals(0, s.connection.waiting.get());
        Service t = pass(gate, new Call(lenientInfo(), b), headers("1", null));
        assertEquals(2, t.connection.id);
        assertEquals("null", t.connection.remote);
        assertSame(a.get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR), remote, "the transport's attributes are kept");
        f.transportTerminated(null);
        f.transportTerminated(Attributes.EMPTY);
        assertEquals(2, metrics.connections.get(), "only a tagged connection is counted down");
        f.transportTerminated(a);
        assertEquals(1, metrics.connections.get());
        f.transportTerminated(b);
        assertEquals(0, metrics.connections.get());
    }
}
