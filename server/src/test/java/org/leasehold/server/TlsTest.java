package org.leasehold.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeasePermissionDeniedException;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.remote.RemoteClientConfig;
import org.leasehold.remote.RemoteLeaseService;

/**
 * TLS and mutual TLS with certificates made at test time ({@link TestCertificates}), against server processes started
 * with {@code --tls-cert}, {@code --tls-key}, {@code --tls-client-ca}, {@code --tokens} and {@code --acl}: clients that
 * trust the CA work, clients that do not (or that present no or a foreign client certificate) fail with an error that
 * says so, and the ACL applies to the principal named by the client certificate's CN.
 */
class TlsTest {
    private static final Path DIR = Path.of("target", "tls");
    private static final HolderId ME = new HolderId("tls-test", "t");
    private static final String TOKEN = "ops-token-0123456789abcdef";

    private static TestCertificates.Issued ca;
    private static TestCertificates.Issued otherCa;
    private static TestCertificates.Issued billing;
    private static TestCertificates.Issued foreignBilling;
    private static ServerProcess tls;
    private static ServerProcess mtls;
    private static ServerProcess mtlsOrToken;

    @BeforeAll
    static void start() throws Exception {
        ca = TestCertificates.authority(DIR, "leasehold-test-ca");
        otherCa = TestCertificates.authority(DIR, "some-other-ca");
        TestCertificates.Issued server = TestCertificates.server(DIR, "lease-server", ca);
        billing = TestCertificates.client(DIR, "billing", ca);
        foreignBilling = TestCertificates.client(DIR, "billing", otherCa);
        Path acl = Files.writeString(DIR.resolve("acl"), "billing tenant/* lease,check\nops * all\n");
        Path tokens = Files.writeString(DIR.resolve("tokens"), "ops " + TOKEN + "\n");
        String cert = "--tls-cert=" + server.certFile();
        String key = "--tls-key=" + server.keyFile();
        String clientCa = "--tls-client-ca=" + ca.certFile();
        tls = ServerProcess.start("tls", cert, key, "--quiet-period=0s");
        mtls = ServerProcess.start("mtls", cert, key, clientCa, "--acl=" + acl, "--quiet-period=0s");
        mtlsOrToken = ServerProcess.start("mtls-or-token", cert, key, clientCa, "--tokens=" + tokens, "--acl=" + acl,
                "--quiet-period=0s");
    }

    @AfterAll
    static void stop() throws Exception {
        for (ServerProcess s : new ServerProcess[] {tls, mtls, mtlsOrToken}) {
            if (s != null) {
                s.close();
            }
        }
    }

    private static RemoteClientConfig.Builder to(ServerProcess server) {
        return RemoteClientConfig.builder(server.address()).callTimeout(Duration.ofSeconds(5));
    }

    private static void acquireAndRelease(RemoteLeaseService leases, String name) throws Exception {
        Lease l = leases.acquire(LeaseRequest.builder(ME, name).build());
        assertTrue(leases.check(name, l.grant(name).generation()));
        leases.release(l, null, null);
    }

    @Test
    void aClientThatTrustsTheCaWorks() throws Exception {
        try (RemoteLeaseService leases = new RemoteLeaseService(to(tls).trustCertificates(ca.certFile()).build())) {
            acquireAndRelease(leases, "any/1");
        }
        // Also under the name in the certificate rather than the address.
        try (RemoteLeaseService leases = new RemoteLeaseService(to(tls).trustCertificates(ca.certFile())
                .authority("localhost").build())) {
            acquireAndRelease(leases, "any/2");
        }
    }

    @Test
    void aClientThatDoesNotTrustTheCaFailsClearly() throws Exception {
        try (RemoteLeaseService leases = new RemoteLeaseService(to(tls).trustCertificates(otherCa.certFile()).build())) {
            LeaseException e = assertThrows(LeaseException.class,
                    () -> leases.acquire(LeaseRequest.builder(ME, "any/3").build()));
            assertTrue(e instanceof LeaseServiceUnavailableException, e.toString());
            assertTrue(e.getMessage().contains("TLS") && e.getMessage().contains("tlsTrustFile"), e.getMessage());
            System.out.println("not trusted: " + e.getMessage());
        }
        // A name the certificate does not carry.
        try (RemoteLeaseService leases = new RemoteLeaseService(to(tls).trustCertificates(ca.certFile())
                .authority("leases.example.org").build())) {
            LeaseException e = assertThrows(LeaseException.class,
                    () -> leases.acquire(LeaseRequest.builder(ME, "any/4").build()));
            assertTrue(e.getMessage().contains("TLS") && e.getMessage().contains("leases.example.org"), e.getMessage());
            System.out.println("wrong name: " + e.getMessage());
        }
        // Plain text against a TLS server.
        try (RemoteLeaseService leases = new RemoteLeaseService(to(tls).build())) {
            LeaseException e = assertThrows(LeaseException.class,
                    () -> leases.acquire(LeaseRequest.builder(ME, "any/5").build()));
            assertTrue(e instanceof LeaseServiceUnavailableException && e.getMessage().contains("tlsTrustFile"), e.toString());
            System.out.println("plain text: " + e.getMessage());
        }
    }

    @Test
    void mutualTlsAuthenticatesTheCertificatesPrincipalAndTheAclApplies() throws Exception {
        try (RemoteLeaseService leases = new RemoteLeaseService(to(mtls).trustCertificates(ca.certFile())
                .clientCertificate(billing.certFile(), billing.keyFile()).build())) {
            acquireAndRelease(leases, "tenant/42");
            LeasePermissionDeniedException denied = assertThrows(LeasePermissionDeniedException.class,
                    () -> leases.acquire(LeaseRequest.builder(ME, "payroll/1").build()));
            assertEquals("billing", denied.principal());
            assertEquals("payroll/1", denied.name());
            assertEquals("lease", denied.permission());
            assertThrows(RuntimeException.class, () -> leases.inspect("tenant/", 10), "billing may not inspect");
        }
    }

    @Test
    void mutualTlsWithoutAClientCertificateIsRefusedClearly() throws Exception {
        try (RemoteLeaseService leases = new RemoteLeaseService(to(mtls).trustCertificates(ca.certFile()).build())) {
            LeasePermissionDeniedException e = assertThrows(LeasePermissionDeniedException.class,
                    () -> leases.acquire(LeaseRequest.builder(ME, "tenant/1").build()));
            assertTrue(e.getMessage().contains("TLS") && e.getMessage().contains("client certificate"), e.getMessage());
            System.out.println("refused: " + e.getMessage());
        }
        // A certificate with the right name from a CA the server does not accept.
        try (RemoteLeaseService leases = new RemoteLeaseService(to(mtls).trustCertificates(ca.certFile())
                .clientCertificate(foreignBilling.certFile(), foreignBilling.keyFile()).build())) {
            LeasePermissionDeniedException e = assertThrows(LeasePermissionDeniedException.class,
                    () -> leases.acquire(LeaseRequest.builder(ME, "tenant/1").build()));
            assertTrue(e.getMessage().contains("TLS") && e.getMessage().contains("client certificate"), e.getMessage());
            System.out.println("refused: " + e.getMessage());
        }
    }

    @Test
    void withTokensToo_aCertificateOrATokenAuthenticates() throws Exception {
        try (RemoteLeaseService byCert = new RemoteLeaseService(to(mtlsOrToken).trustCertificates(ca.certFile())
                .clientCertificate(billing.certFile(), billing.keyFile()).build());
                RemoteLeaseService byToken = new RemoteLeaseService(to(mtlsOrToken).trustCertificates(ca.certFile())
                        .token(TOKEN).build());
                RemoteLeaseService neither = new RemoteLeaseService(to(mtlsOrToken).trustCertificates(ca.certFile())
                        .build())) {
            acquireAndRelease(byCert, "tenant/7");
            assertEquals("billing", assertThrows(LeasePermissionDeniedException.class,
                    () -> byCert.acquire(LeaseRequest.builder(ME, "payroll/7").build())).principal());
            acquireAndRelease(byToken, "payroll/7");
            LeasePermissionDeniedException e = assertThrows(LeasePermissionDeniedException.class,
                    () -> neither.acquire(LeaseRequest.builder(ME, "tenant/7").build()));
            assertTrue(e.getMessage().contains("did not authenticate"), e.getMessage());
        }
    }
}
