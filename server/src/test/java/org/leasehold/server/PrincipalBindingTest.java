package org.leasehold.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.logging.LogRecord;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.leasehold.audit.FrameWitness;
import org.leasehold.engine.EngineConfig;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.HolderStatus;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeasePermissionDeniedException;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.NameStatus;
import org.leasehold.lease.StaleLeaseException;
import org.leasehold.remote.RemoteCallFailedException;
import org.leasehold.remote.RemoteClientConfig;
import org.leasehold.remote.RemoteLeaseService;

/**
 * Holders belong to the principal their lease was granted to. Three principals by token on one server, with both
 * transports: {@code billing} holds a name; {@code mallory}, who may lease the same names, reads what a busy answer
 * tells her and forges a {@code Lease} with billing's holder and generation (and one with her own holder): release,
 * renewal and upgrade are refused naming both principals, and billing's lease stays held and renewable; {@code ops}
 * with the {@code admin} permission may release it, which is logged with both principals. Also: the admin view of a
 * prefix with nothing the caller may inspect is refused.
 */
class PrincipalBindingTest {
    private static final String TOKEN_BILLING = "billing-token-0123456789abcdef";
    private static final String TOKEN_MALLORY = "mallory-token-0123456789abcdef";
    private static final String TOKEN_OPS = "ops-token-0123456789abcdef";
    private static final String TOKEN_AUDITOR = "auditor-token-0123456789abcdef";
    private static final HolderId BILLING = new HolderId("billing-app", "worker-7");
    private static final HolderId MALLORY = new HolderId("mallory-app", "m1");

    private final Path dir = Path.of("target", "principals-" + System.nanoTime());
    private final List<AutoCloseable> closing = new ArrayList<>();
    private LogCapture serviceLog;
    private LeaseServer server;

    @BeforeEach
    void start() throws Exception {
        Files.createDirectories(dir);
        Path tokens = Files.writeString(dir.resolve("tokens"), "billing " + TOKEN_BILLING + "\nmallory " + TOKEN_MALLORY
                + "\nops " + TOKEN_OPS + "\nauditor " + TOKEN_AUDITOR + "\n");
        Path acl = Files.writeString(dir.resolve("acl"), String.join("\n",
                "# principal names permissions",
                "*         public/*    lease,check",
                "billing   public/*    inspect",
                "ops       *           inspect,check,admin",
                "auditor   tenant/a/*  inspect",
                ""));
        server = LeaseServer.start(ServerConfig.loopback(EngineConfig.defaults().withQuietPeriod(Duration.ZERO))
                .withSecurity(null, null, null, tokens, acl).withLimits(1_000, 1_000, 1_000, 64 * 1024)
                .withSocket(ServerConfig.SocketSettings.loopback())
                .withHttpListen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0)));
        serviceLog = LogCapture.of(LeaseCalls.class);
    }

    @AfterEach
    void stop() throws Exception {
        serviceLog.close();
        List<AutoCloseable> reversed = new ArrayList<>(closing);
        Collections.reverse(reversed);
        for (AutoCloseable c : reversed) {
            c.close();
        }
        server.close();
    }

    private RemoteLeaseService client(RemoteClientConfig.Transport transport, String token) {
        RemoteLeaseService c = new RemoteLeaseService(RemoteClientConfig.builder(server.address()).transport(transport)
                .token(token).callTimeout(Duration.ofSeconds(10)).build());
        closing.add(c);
        return c;
    }

    private static HolderStatus holderOf(RemoteLeaseService ops, String name) {
        for (NameStatus s : ops.inspect(name, 10)) {
            if (s.name().equals(name) && !s.holders().isEmpty()) {
                return s.holders().get(0);
            }
        }
        return null;
    }

    /** {@code lease}'s names and generations, claimed by {@code holder}. */
    private static Lease forged(Lease lease, HolderId holder, LeaseKind kind) {
        return new Lease(holder, lease.mode(), kind, lease.grantedAt(), lease.deadline(), lease.grants());
    }

    private static void assertRefusedNamingBoth(LeasePermissionDeniedException e, String op, String name) {
        assertEquals("mallory", e.principal(), e.getMessage());
        assertEquals(name, e.name(), e.getMessage());
        assertTrue(e.getMessage().contains("principal 'mallory' may not " + op + " '" + name + "'")
                && e.getMessage().contains("granted to principal 'billing'"), e.getMessage());
    }

    @ParameterizedTest
    @EnumSource(RemoteClientConfig.Transport.class)
    void anotherPrincipalCannotEndRenewOrUpgradeALeaseWhateverHolderItClaims(RemoteClientConfig.Transport transport)
            throws Exception {
        RemoteLeaseService billing = client(transport, TOKEN_BILLING);
        RemoteLeaseService mallory = client(transport, TOKEN_MALLORY);
        RemoteLeaseService ops = client(transport, TOKEN_OPS);
        String name = "public/" + transport.name().toLowerCase(java.util.Locale.ROOT);
        Lease held = billing.acquire(LeaseRequest.builder(BILLING, name).leaseFor(Duration.ofSeconds(30)).build());
        long generation = held.grant(name).generation();

        // Mallory forges billing's lease (its holder, generation and deadline, learnt as an attacker would: from a busy
        // answer, counting generations): refused.
        Lease asBilling = forged(held, BILLING, LeaseKind.FULL);
        assertRefusedNamingBoth(assertThrows(LeasePermissionDeniedException.class,
                () -> mallory.release(asBilling, null, null)), "release", name);
        assertRefusedNamingBoth(assertThrows(LeasePermissionDeniedException.class,
                () -> mallory.renew(asBilling, held.deadline().plusSeconds(5), "mallory was here")), "renew", name);
        assertRefusedNamingBoth(assertThrows(LeasePermissionDeniedException.class,
                () -> mallory.upgrade(forged(held, BILLING, LeaseKind.TENTATIVE), held.deadline().plusSeconds(5))),
                "upgrade", name);
        // ... and with her own holder identity.
        assertRefusedNamingBoth(assertThrows(LeasePermissionDeniedException.class,
                () -> mallory.release(forged(held, MALLORY, LeaseKind.FULL), null, null)), "release", name);

        // Billing's lease is untouched: still held by billing, still current, and billing may still renew it.
        HolderStatus h = holderOf(ops, name);
        assertNotNull(h, "the lease is still held");
        assertEquals(BILLING, h.holder());
        assertEquals(generation, h.generation());
        assertEquals(held.deadline(), h.deadline(), "the refused renewal moved nothing");
        assertTrue(ops.check(name, generation));
        Lease renewed = billing.renew(held, held.deadline().plusSeconds(5), null);
        assertTrue(renewed.deadline().isAfter(held.deadline()), renewed.toString());

        // A busy answer tells mallory the deadline, not the holder: she may not inspect the name.
        LeaseBusyException busy = assertThrows(LeaseBusyException.class,
                () -> mallory.acquire(LeaseRequest.builder(MALLORY, name).build()));
        assertEquals(name, busy.name());
        assertEquals(renewed.deadline(), busy.heldUntil());
        assertTrue(busy.getMessage().contains("held by another holder until " + renewed.deadline()), busy.getMessage());
        assertFalse(busy.getMessage().contains(BILLING.process()), busy.getMessage());
        // Billing may inspect it, so its own busy answer (another of its workers) names the holder.
        LeaseBusyException own = assertThrows(LeaseBusyException.class,
                () -> billing.acquire(LeaseRequest.builder(new HolderId("billing-app", "worker-8"), name).build()));
        assertTrue(own.getMessage().contains(BILLING.toString()), own.getMessage());

        // An admin may end it; that is logged with both principals. Then billing's lease is over.
        List<LogRecord> logged = serviceLog.records();
        assertTrue(logged.stream().noneMatch(r -> r.getMessage().contains("LEASEHOLD-2110")));
        ops.release(forged(held, BILLING, LeaseKind.FULL), null, null);
        assertFalse(ops.check(name, generation));
        assertTrue(logged.stream().anyMatch(r -> r.getMessage().contains("LEASEHOLD-2110")
                && List.of(r.getParameters()).containsAll(List.of("ops", "billing"))), logged.toString());
        assertThrows(StaleLeaseException.class, () -> billing.renew(renewed, renewed.deadline().plusSeconds(1), null));

        // Mallory's own lease is hers to renew and release.
        Lease mine = mallory.acquire(LeaseRequest.builder(MALLORY, name).build());
        mallory.renew(mine, mine.deadline().plusSeconds(1), null);
        mallory.release(mine, null, null);
    }

    /**
     * A lease held in doubt is renewed by the server itself, not through a call: it stays bound to its principal for the
     * whole hold, long after the deadline its holder last saw.
     */
    /** The witness of every grant of {@code lease} names {@code principal}. */
    private static void assertWitnessesName(String principal, Lease lease) throws Exception {
        for (LeaseGrant g : lease.grants()) {
            assertNotNull(g.witness(), "the grant of " + g.name() + " carries a witness (the server signs)");
            assertEquals(principal, FrameWitness.decode(g.witness().await(Duration.ofSeconds(30))).witness()
                    .principal(), g.name());
        }
    }

    @ParameterizedTest
    @EnumSource(RemoteClientConfig.Transport.class)
    void witnessesNameThePrincipalTheServerAuthenticatedNotOneTheRequestClaims(RemoteClientConfig.Transport transport)
            throws Exception {
        RemoteLeaseService billing = client(transport, TOKEN_BILLING);
        RemoteLeaseService mallory = client(transport, TOKEN_MALLORY);
        // The request claims 'ops': a client sends no principal, and the server names the one its token proved.
        Lease lease = billing.acquire(LeaseRequest.builder(BILLING, "public/w1", "public/w2").tentative().build()
                .withPrincipal("ops"));
        assertWitnessesName("billing", lease);
        Lease up = billing.upgrade(lease, null);
        assertWitnessesName("billing", up);
        Lease renewed = billing.renewFor(up, Duration.ofSeconds(20));
        assertWitnessesName("billing", renewed);
        // Granted from the queue when billing releases: mallory's witness names mallory.
        CompletableFuture<Lease> queued = mallory.acquireAsync(LeaseRequest.builder(MALLORY, "public/w1")
                .waitFor(Duration.ofSeconds(20)).build());
        billing.release(renewed, null, null);
        Lease granted = queued.get(20, TimeUnit.SECONDS);
        assertWitnessesName("mallory", granted);
        mallory.release(granted, null, null);
    }

    @Test
    void aLeaseHeldInDoubtStaysBoundToItsPrincipalWhileTheServerRenewsIt() throws Exception {
        Instant start = Instant.parse("2026-03-01T10:00:00Z");
        Path tokens = dir.resolve("tokens");
        Path acl = dir.resolve("acl");
        try (LeaseServer clocked = LeaseServer.start(ServerConfig.loopback(EngineConfig.defaults()
                .withQuietPeriod(Duration.ZERO)).withSecurity(null, null, null, tokens, acl).withTestClock(start));
                TestClockClient clock = new TestClockClient(clocked.address(), TOKEN_OPS)) {
            RemoteLeaseService billing = new RemoteLeaseService(RemoteClientConfig.builder(clocked.address())
                    .token(TOKEN_BILLING).callTimeout(Duration.ofSeconds(10)).build());
            closing.add(billing);
            RemoteLeaseService mallory = new RemoteLeaseService(RemoteClientConfig.builder(clocked.address())
                    .token(TOKEN_MALLORY).callTimeout(Duration.ofSeconds(10)).build());
            closing.add(mallory);
            Lease held = billing.acquire(LeaseRequest.builder(BILLING, "public/doubt").build());
            billing.holdInDoubt(held, start.plusSeconds(60));
            for (int i = 0; i < 15; i++) {
                clock.advance(Duration.ofSeconds(2)); // 30 s: three of billing's leases, renewed by the server
            }
            // Grants sweep the record of leases past their deadline: one now, as any busy server would make.
            mallory.release(mallory.acquire(LeaseRequest.builder(MALLORY, "public/other").build()), null, null);
            assertRefusedNamingBoth(assertThrows(LeasePermissionDeniedException.class,
                    () -> mallory.release(forged(held, BILLING, LeaseKind.FULL), null, null)), "release",
                    "public/doubt");
            assertTrue(billing.check("public/doubt", held.grant("public/doubt").generation()), "still billing's");
            billing.release(billing.renewFor(held, Duration.ofSeconds(5)), null, null);
        }
    }

    @Test
    void adminMayNotRenewAnotherPrincipalsLeaseAndLeaseWithoutAdminMayNotRelease() throws Exception {
        RemoteLeaseService billing = client(RemoteClientConfig.Transport.GRPC, TOKEN_BILLING);
        RemoteLeaseService ops = client(RemoteClientConfig.Transport.GRPC, TOKEN_OPS);
        Lease held = billing.acquire(LeaseRequest.builder(BILLING, "public/renew").build());
        // Admin ends leases; it does not keep them: a renewal of billing's lease is refused for ops too.
        LeasePermissionDeniedException e = assertThrows(LeasePermissionDeniedException.class,
                () -> ops.renew(held, held.deadline().plusSeconds(1), null));
        assertEquals("ops", e.principal());
        assertTrue(e.getMessage().contains("granted to principal 'billing'"), e.getMessage());
        billing.release(held, null, null);
        // The ACL still applies to the owner: billing may not lease outside public/ (nothing to release there).
        assertThrows(LeasePermissionDeniedException.class,
                () -> billing.acquire(LeaseRequest.builder(BILLING, "tenant/a/1").build()));
    }

    @Test
    void inspectingAPrefixWithNothingTheCallerMayInspectIsRefused() throws Exception {
        RemoteLeaseService ops = client(RemoteClientConfig.Transport.GRPC, TOKEN_OPS);
        RemoteLeaseService auditor = client(RemoteClientConfig.Transport.GRPC, TOKEN_AUDITOR);
        RemoteLeaseService billing = client(RemoteClientConfig.Transport.GRPC, TOKEN_BILLING);
        Lease p = billing.acquire(LeaseRequest.builder(BILLING, "public/x").build());
        RemoteCallFailedException refused = assertThrows(RemoteCallFailedException.class,
                () -> auditor.inspect("tenant/b/", 10));
        LeasePermissionDeniedException denied = (LeasePermissionDeniedException) refused.getCause();
        assertEquals("auditor", denied.principal());
        assertEquals("tenant/b/", denied.name());
        assertEquals("inspect", denied.permission());
        assertThrows(RemoteCallFailedException.class, () -> auditor.inspect("public/", 10), "nothing under public/");
        // A prefix above what it may see is answered with what it may see (nothing held there now), not refused.
        assertTrue(auditor.inspect("tenant/", 10).isEmpty());
        assertTrue(auditor.inspect("tenant/a/", 10).isEmpty());
        assertEquals(1, ops.inspect("public/", 10).size());
        billing.release(p, null, null);
    }
}
