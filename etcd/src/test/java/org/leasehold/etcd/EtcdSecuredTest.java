package org.leasehold.etcd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.etcd.jetcd.Auth;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.auth.Permission;
import io.etcd.jetcd.options.OptionsUtil;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseMode;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.lease.NameStatus;
import org.leasehold.time.ManualTimeSource;

/**
 * A secured etcd: clients over TLS only (certificates made by the test) and authentication on, with a Leasehold user
 * whose role may read and write one key prefix. Two services with {@code tls=true&trust=...&user=...&password=...}
 * run a short part of the contract (waiting through the watch, renewal, release, fencing, shared holds, inspection);
 * a wrong password, an untrusted certificate and a prefix outside the role each fail with a message that names what
 * is wrong and what to give instead.
 */
class EtcdSecuredTest {
    private static final String PREFIX = "secured/";
    private static final String PASSWORD = "lh-" + Long.toHexString(System.nanoTime());
    private static EtcdCluster cluster;
    private static TestCertificates.Issued authority;
    private static TestCertificates.Issued stranger;

    @BeforeAll
    static void startSecuredMember() throws Exception {
        java.nio.file.Path certs = java.nio.file.Path.of(System.getProperty("leasehold.etcd.dir", "target/etcd-tests"))
                .toAbsolutePath().resolve("secured-certs-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
        authority = TestCertificates.authority(certs, "etcd-ca");
        stranger = TestCertificates.authority(certs, "other-ca");
        TestCertificates.Issued server = TestCertificates.server(certs, "etcd-member", authority);
        cluster = EtcdCluster.startSecured("secured", server.certFile(), server.keyFile());
        try (Client admin = Client.builder().endpoints(cluster.endpoints().get(0))
                .sslContext(ssl -> ssl.trustManager(authority.certFile().toFile())).build()) {
            Auth auth = admin.getAuthClient();
            await(auth.userAdd(bytes("root"), bytes("root-" + PASSWORD)));
            await(auth.roleAdd(bytes("root")));
            await(auth.userGrantRole(bytes("root"), bytes("root")));
            await(auth.roleAdd(bytes("leasehold")));
            await(auth.roleGrantPermission(bytes("leasehold"), bytes(PREFIX), OptionsUtil.prefixEndOf(bytes(PREFIX)),
                    Permission.Type.READWRITE));
            await(auth.userAdd(bytes("leasehold"), bytes(PASSWORD)));
            await(auth.userGrantRole(bytes("leasehold"), bytes("leasehold")));
            await(auth.authEnable());
        }
    }

    @AfterAll
    static void stopMember() {
        cluster.close();
    }

    /** The specification an operator writes: endpoints as host:port, TLS with the trusted authority, a user. */
    private static String spec(String trust, String password, String prefix) {
        return "etcd:127.0.0.1:" + cluster.endpoints().get(0).getPort() + "?tls=true&trust=" + trust
                + "&user=leasehold&password=" + password + "&prefix=" + prefix + "&callTimeout=5s";
    }

    private static EtcdLeaseService service(String spec, String id, ManualTimeSource time) {
        return new EtcdLeaseService(EtcdConfig.parse(spec + "&serviceId=" + id), time);
    }

    @Test
    void leasesWorkOverTlsWithAUserLimitedToThePrefix() throws Exception {
        ManualTimeSource time = new ManualTimeSource(EtcdFixture.START);
        String spec = spec(authority.certFile().toString(), PASSWORD, PREFIX);
        try (EtcdLeaseService a = service(spec, "a", time); EtcdLeaseService b = service(spec, "b", time)) {
            assertEquals("https", a.config().endpoints().get(0).getScheme());
            Lease first = a.acquire(LeaseRequest.builder(new HolderId("app-1", "tx"), "s/1")
                    .leaseFor(Duration.ofSeconds(5)).build());
            long generation = first.grant("s/1").generation();
            // Queued by the other service (its etcd lease, its queue entries), woken through its watch.
            CompletableFuture<Lease> queued = b.acquireAsync(LeaseRequest.builder(new HolderId("app-2", "tx"), "s/1")
                    .leaseFor(Duration.ofSeconds(5)).waitFor(Duration.ofSeconds(30)).build());
            assertThrows(LeaseBusyException.class,
                    () -> b.acquire(LeaseRequest.builder(new HolderId("app-3", "tx"), "s/1").build()));
            time.advance(Duration.ofSeconds(1));
            Lease renewed = a.renewFor(first, Duration.ofSeconds(5));
            assertEquals(EtcdFixture.START.plusSeconds(6), renewed.deadline());
            assertTrue(b.check("s/1", generation));
            NameStatus status = b.inspect("s/", 10).get(0);
            assertEquals(List.of("app-1"), status.holders().stream().map(h -> h.holder().process()).toList());
            assertEquals(1, status.waiters().size());
            a.release(renewed, null, "log-1");
            Lease second = queued.get(60, TimeUnit.SECONDS);
            assertTrue(second.grant("s/1").generation() > generation);
            assertFalse(a.check("s/1", generation));
            assertTrue(a.check("s/1", second.grant("s/1").generation()));
            b.release(second, null, null);

            Lease shared1 = a.acquire(LeaseRequest.builder(new HolderId("reader-1", "tx"), List.of("s/2", "s/3"))
                    .mode(LeaseMode.SHARED).build());
            Lease shared2 = b.acquire(LeaseRequest.builder(new HolderId("reader-2", "tx"), List.of("s/2", "s/3"))
                    .mode(LeaseMode.SHARED).build());
            assertEquals(2, a.inspect("s/2", 1).get(0).holders().size());
            a.release(shared1, null, null);
            b.release(shared2, null, null);
        }
    }

    @Test
    void aWrongPasswordIsNamed() {
        ManualTimeSource time = new ManualTimeSource(EtcdFixture.START);
        try (EtcdLeaseService s = service(spec(authority.certFile().toString(), "wrong", PREFIX), "wrong-pw", time)) {
            String m = refused(s);
            assertTrue(m.contains("refused to authenticate user 'leasehold'") && m.contains("password"), m);
            assertFalse(m.contains("quorum"), m);
        }
    }

    @Test
    void noUserIsNamed() {
        ManualTimeSource time = new ManualTimeSource(EtcdFixture.START);
        try (EtcdLeaseService s = new EtcdLeaseService(EtcdConfig.parse("etcd:127.0.0.1:"
                + cluster.endpoints().get(0).getPort() + "?trust=" + authority.certFile() + "&prefix=" + PREFIX), time)) {
            String m = refused(s);
            assertTrue(m.contains("requires authentication and the service gave no user") && m.contains("user="), m);
            assertFalse(m.contains("quorum"), m);
        }
    }

    @Test
    void anUntrustedCertificateIsNamed() {
        ManualTimeSource time = new ManualTimeSource(EtcdFixture.START);
        String trust = stranger.certFile().toString();
        try (EtcdLeaseService s = service(spec(trust, PASSWORD, PREFIX), "untrusted", time)) {
            String m = refused(s);
            assertTrue(m.contains("TLS handshake") && m.contains("trust=" + trust) && m.contains("give trust="), m);
            assertFalse(m.contains("quorum"), m);
        }
    }

    @Test
    void aPrefixOutsideTheRoleIsNamed() {
        ManualTimeSource time = new ManualTimeSource(EtcdFixture.START);
        try (EtcdLeaseService s = service(spec(authority.certFile().toString(), PASSWORD, "elsewhere/"), "outside",
                time)) {
            String m = refused(s);
            assertTrue(m.contains("denied user 'leasehold'") && m.contains("prefix 'elsewhere/'")
                    && m.contains("grant-permission"), m);
            assertFalse(m.contains("quorum"), m);
        }
    }

    private static String refused(EtcdLeaseService s) {
        return assertThrows(LeaseServiceUnavailableException.class, () -> s.acquire(LeaseRequest.builder(
                new HolderId("app", "tx"), "s/9").build())).getMessage();
    }

    private static ByteSequence bytes(String s) {
        return ByteSequence.from(s, StandardCharsets.UTF_8);
    }

    private static <T> T await(CompletableFuture<T> f) throws Exception {
        return f.get(30, TimeUnit.SECONDS);
    }
}
