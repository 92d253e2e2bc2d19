package org.leasehold.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.leasehold.engine.EngineConfig;
import org.leasehold.lease.CorrelationId;
import org.leasehold.lease.Ending;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.InvalidLeaseRequestException.Reason;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseMode;
import org.leasehold.lease.LeasePermissionDeniedException;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.Predecessor;
import org.leasehold.server.AccessControl.Permission;
import org.leasehold.time.Micros;
import org.leasehold.wire.ProtoCodec;
import org.leasehold.wire.Protocol;
import org.leasehold.wire.proto.AcquireRequest;
import org.leasehold.wire.proto.LeaseRef;
import org.leasehold.wire.proto.ResetForTestRequest;
import org.leasehold.wire.proto.SessionRequest;

/**
 * The server's access checks and request decoding, one rule at a time and at each edge, as an adversary would probe
 * them: the ACL and token files as read (every malformed line refused with its line number), which names each kind of
 * pattern covers, the prefixes the admin view may show, forged references to another principal's lease, a busy answer
 * shown to a principal who may not inspect the name, and each field of a decoded request out of its range. Each
 * refusal is asserted with its reason and the words that carry information.
 */
class AccessChecksTest {
    private static final long T0 = Micros.of(Instant.parse("2026-03-01T10:00:00Z"));
    private static final HolderId HOLDER = new HolderId("app", "t1");

    private final Path dir = Path.of("target", "access-checks-" + System.nanoTime());

    private Path file(String name, String... lines) throws Exception {
        Files.createDirectories(dir);
        return Files.writeString(dir.resolve(name), String.join("\n", lines) + "\n");
    }

    private AccessControl acl(String... lines) throws Exception {
        return AccessControl.read(file("acl", lines));
    }

    private static Lease lease(Object... nameAndGeneration) {
        Predecessor none = new Predecessor(CorrelationId.NONE, Ending.UNKNOWN, Instant.EPOCH, null, null);
        LeaseGrant[] grants = new LeaseGrant[nameAndGeneration.length / 2];
        for (int i = 0; i < grants.length; i++) {
            grants[i] = new LeaseGrant((String) nameAndGeneration[2 * i], (Long) nameAndGeneration[2 * i + 1],
                    CorrelationId.NONE, Instant.EPOCH, Instant.EPOCH, none);
        }
        return new Lease(HOLDER, LeaseMode.EXCLUSIVE, LeaseKind.FULL, Micros.toInstant(T0),
                Micros.toInstant(T0 + 30_000_000), Arrays.asList(grants));
    }

    // ------------------------------------------------------------------------------------------------ ACL file

    @Test
    void aclLinesThatAreBlankOrCommentsAreSkippedAndEveryOtherLineIsARule() throws Exception {
        AccessControl a = acl("# principal names permissions", "", "   ", "   # indented comment",
                "billing tenant/* lease,check", "  ops   *   INSPECT,admin  ");
        assertEquals(2, a.size());
        assertEquals(dir.resolve("acl").toString(), a.source());
        assertTrue(a.allowed("billing", Permission.LEASE, "tenant/1"));
        assertTrue(a.allowed("billing", Permission.CHECK, "tenant/1"));
        assertFalse(a.allowed("billing", Permission.INSPECT, "tenant/1"));
        assertTrue(a.allowed("ops", Permission.INSPECT, "x"), "permissions are read whatever their case");
        assertTrue(a.allowed("ops", Permission.ADMIN, "x"));
        assertFalse(a.allowed("ops", Permission.LEASE, "x"));
    }

    @Test
    void aclLinesWithoutThreeFieldsAreRefusedWithTheirLineNumberAndCount() throws Exception {
        Path two = file("acl2", "# rules", "billing tenant/*");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> AccessControl.read(two));
        assertEquals(two + " line 2: expected '<principal> <names> <permissions>', for example 'billing tenant/* "
                + "lease,check'; got 2 field(s)", e.getMessage());
        Path four = file("acl4", "billing tenant/* lease check");
        e = assertThrows(IllegalArgumentException.class, () -> AccessControl.read(four));
        assertEquals(four + " line 1: expected '<principal> <names> <permissions>', for example 'billing tenant/* "
                + "lease,check'; got 4 field(s)", e.getMessage());
    }

    @Test
    void aStarAnywhereButAtTheEndOfAPatternIsRefused() throws Exception {
        for (String pattern : List.of("*x", "tenant/*/x", "a**")) {
            Path f = file("acl-star", "ok a lease", "billing " + pattern + " lease");
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> AccessControl.read(f),
                    pattern);
            assertEquals(f + " line 2: the names pattern '" + pattern + "' may have '*' only at its end ('tenant/*', "
                    + "or '*' for every name)", e.getMessage());
        }
        AccessControl ok = acl("a * lease", "b tenant/* lease", "c exact lease");
        assertEquals(3, ok.size());
    }

    @Test
    void anUnknownPermissionIsRefusedNamingItAndTheKnownOnes() throws Exception {
        Path f = file("acl-perm", "", "billing tenant/* lease,lend");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> AccessControl.read(f));
        assertEquals(f + " line 2: unknown permission 'lend'; use lease, check, inspect, all or admin", e.getMessage());
        assertInstanceOf(IllegalArgumentException.class, e.getCause());
    }

    @Test
    void allGivesLeaseCheckAndInspectButNeverAdmin() throws Exception {
        assertEquals(Set.of(Permission.LEASE, Permission.CHECK, Permission.INSPECT), Permission.ALL);
        assertEquals("lease", Permission.LEASE.word());
        assertEquals("admin", Permission.ADMIN.word());
        AccessControl a = acl("ops * all");
        for (Permission p : Permission.ALL) {
            assertTrue(a.allowed("ops", p, "any/name"), p.word());
        }
        assertFalse(a.allowed("ops", Permission.ADMIN, "any/name"));
        AccessControl none = AccessControl.allowAll();
        assertEquals("(no ACL file)", none.source());
        assertEquals(1, none.size());
        assertTrue(none.allowed("anyone", Permission.LEASE, "x"));
        assertTrue(none.allowed("anyone", Permission.CHECK, "x"));
        assertTrue(none.allowed("anyone", Permission.INSPECT, "x"));
        assertFalse(none.allowed("anyone", Permission.ADMIN, "x"));
        assertTrue(none.mayInspectAll("anyone", "x/"));
    }

    // ------------------------------------------------------------------------------------------------ ACL rules

    @Test
    void aPrefixPatternCoversTheNamesThatStartWithItAndNothingElse() throws Exception {
        AccessControl a = acl("billing tenant/* lease", "billing exact/name check", "* public/* lease");
        assertTrue(a.allowed("billing", Permission.LEASE, "tenant/"), "the prefix itself is a name under it");
        assertTrue(a.allowed("billing", Permission.LEASE, "tenant/42/x"));
        assertFalse(a.allowed("billing", Permission.LEASE, "tenant"));
        assertFalse(a.allowed("billing", Permission.LEASE, "tenanT/42"));
        assertFalse(a.allowed("billing", Permission.LEASE, "other/tenant/1"));
        assertTrue(a.allowed("billing", Permission.CHECK, "exact/name"));
        assertFalse(a.allowed("billing", Permission.CHECK, "exact/name2"), "an exact pattern is not a prefix");
        assertFalse(a.allowed("billing", Permission.CHECK, "exact/nam"));
        assertFalse(a.allowed("billing", Permission.CHECK, "tenant/1"), "the rule must give that permission");
        assertFalse(a.allowed("mallory", Permission.LEASE, "tenant/1"), "the rule must be the caller's");
        assertTrue(a.allowed("mallory", Permission.LEASE, "public/1"), "'*' is every principal");
        assertTrue(a.allowed("billing", Permission.LEASE, null), "a null name is the engine's to refuse");
    }

    @Test
    void firstDeniedNamesTheFirstNameWithoutThePermission() throws Exception {
        AccessControl a = acl("billing tenant/* lease");
        assertNull(a.firstDenied("billing", Permission.LEASE, List.of("tenant/a", "tenant/b")));
        assertNull(a.firstDenied("billing", Permission.LEASE, List.of()));
        assertEquals("other/b", a.firstDenied("billing", Permission.LEASE, List.of("tenant/a", "other/b", "other/c")));
        assertEquals("tenant/a", a.firstDenied("mallory", Permission.LEASE, List.of("tenant/a", "other/b")));
        assertNull(a.firstDenied("billing", Permission.LEASE, Arrays.asList("tenant/a", null)));
    }

    @Test
    void mayInspectAllNeedsARuleCoveringEveryNameUnderThePrefix() throws Exception {
        AccessControl a = acl("auditor tenant/a/* inspect", "auditor exact/x inspect", "leaser * lease",
                "ops * inspect");
        assertTrue(a.mayInspectAll("auditor", "tenant/a/"));
        assertTrue(a.mayInspectAll("auditor", "tenant/a/deep/"));
        assertFalse(a.mayInspectAll("auditor", "tenant/"), "tenant/b/... is not covered");
        assertFalse(a.mayInspectAll("auditor", "tenant/a"), "tenant/ab is not covered");
        assertFalse(a.mayInspectAll("auditor", "exact/x"), "an exact pattern covers no prefix");
        assertFalse(a.mayInspectAll("leaser", ""), "lease is not inspect");
        assertFalse(a.mayInspectAll("mallory", "tenant/a/"), "not the caller's rule");
        assertTrue(a.mayInspectAll("ops", ""));
        assertTrue(a.mayInspectAll("ops", "anything/"));
    }

    @Test
    void mayInspectSomeUnderAPrefixWhenSomeRuleCanCoverANameStartingWithIt() throws Exception {
        AccessControl a = acl("auditor tenant/a/* inspect", "auditor exact/x inspect", "leaser * lease");
        assertTrue(a.mayInspectSomeUnder("auditor", "tenant/a/x/"), "a prefix under the pattern's");
        assertTrue(a.mayInspectSomeUnder("auditor", "tenant/"), "a prefix above the pattern's");
        assertTrue(a.mayInspectSomeUnder("auditor", ""));
        assertTrue(a.mayInspectSomeUnder("auditor", null), "no prefix is every name");
        assertFalse(a.mayInspectSomeUnder("auditor", "tenant/b/"));
        assertTrue(a.mayInspectSomeUnder("auditor", "exact/"), "the exact name is under it");
        assertTrue(a.mayInspectSomeUnder("auditor", "exact/x"));
        assertFalse(a.mayInspectSomeUnder("auditor", "exact/xy"));
        assertFalse(a.mayInspectSomeUnder("auditor", "other/"));
        assertFalse(a.mayInspectSomeUnder("leaser", ""), "lease is not inspect");
        assertFalse(a.mayInspectSomeUnder("mallory", ""), "not the caller's rule");
        assertTrue(acl("ops * inspect").mayInspectSomeUnder("ops", "x/"));
    }

    // ------------------------------------------------------------------------------------------------ tokens

    @Test
    void tokensAreReadOnePrincipalPerLineAndLookedUpByToken() throws Exception {
        Credentials c = Credentials.read(file("tokens", "# principal token", "", "  ", "billing 0123456789abcdef",
                "  ops   ops-token-0123456789abcdef  "));
        assertEquals(2, c.size());
        assertEquals("billing", c.principalOf("0123456789abcdef"), "16 characters is long enough");
        assertEquals("ops", c.principalOf("ops-token-0123456789abcdef"));
        assertNull(c.principalOf("0123456789abcde"));
        assertNull(c.principalOf("billing"));
        assertNull(c.principalOf(""));
    }

    @Test
    void aTokenFileLineIsRefusedWithItsLineNumberWhenItIsNotOnePrincipalAndOneLongToken() throws Exception {
        Path one = file("t1", "# tokens", "billing");
        assertEquals(one + " line 2: expected '<principal> <token>', got 1 field(s)",
                assertThrows(IllegalArgumentException.class, () -> Credentials.read(one)).getMessage());
        Path three = file("t3", "billing 0123456789abcdef extra");
        assertEquals(three + " line 1: expected '<principal> <token>', got 3 field(s)",
                assertThrows(IllegalArgumentException.class, () -> Credentials.read(three)).getMessage());
        Path shortToken = file("t15", "ops 0123456789abcdef", "billing 0123456789abcde");
        assertEquals(shortToken + " line 2: the token of 'billing' is shorter than 16 characters; use a long random "
                + "token (e.g. openssl rand -hex 32)",
                assertThrows(IllegalArgumentException.class, () -> Credentials.read(shortToken)).getMessage());
        Path shared = file("tshared", "billing 0123456789abcdef", "# the same token again", "mallory 0123456789abcdef");
        assertEquals(shared + " line 3: the same token is given to 'billing' and 'mallory': give each principal its "
                + "own token", assertThrows(IllegalArgumentException.class, () -> Credentials.read(shared)).getMessage());
        Path empty = file("tempty", "# nobody", "");
        assertEquals(empty + " has no '<principal> <token>' line: nobody could authenticate",
                assertThrows(IllegalArgumentException.class, () -> Credentials.read(empty)).getMessage());
    }

    // ------------------------------------------------------------------------------------------------ held leases

    private static LeaseAccess access(AccessControl acl, GrantOwners owners) {
        return new LeaseAccess(acl, owners);
    }

    @Test
    void aDeniedCallNamesThePrincipalTheNameThePermissionAndTheAcl() throws Exception {
        AccessControl a = acl("billing tenant/* lease");
        LeasePermissionDeniedException e = access(a, new GrantOwners()).denied("mallory", Permission.CHECK,
                "tenant/\n1");
        assertEquals("mallory", e.principal());
        assertEquals("tenant/\n1", e.name());
        assertEquals("check", e.permission());
        assertEquals("principal 'mallory' may not check 'tenant/\\u000A1': no rule of the access control list "
                + a.source() + " gives it 'check' on that name; ask the operator to add one", e.getMessage());
    }

    @Test
    void theAccessChecksAskTheAcl() throws Exception {
        LeaseAccess access = access(acl("billing tenant/* lease", "auditor tenant/a/* inspect"), new GrantOwners());
        assertTrue(access.allowed("billing", Permission.LEASE, "tenant/1"));
        assertFalse(access.allowed("billing", Permission.LEASE, "other/1"));
        assertFalse(access.allowed("mallory", Permission.LEASE, "tenant/1"));
        assertEquals("other/1", access.firstDenied("billing", Permission.LEASE, List.of("tenant/1", "other/1")));
        assertNull(access.firstDenied("billing", Permission.LEASE, List.of("tenant/1")));
        assertTrue(access.mayInspectAll("auditor", "tenant/a/"));
        assertFalse(access.mayInspectAll("auditor", "tenant/"));
        assertTrue(access.mayInspectSomeUnder("auditor", "tenant/"));
        assertFalse(access.mayInspectSomeUnder("auditor", "tenant/b/"));
    }

    @Test
    void theOwnerOfEveryGrantMayRenewUpgradeAndReleaseItsLease() throws Exception {
        GrantOwners owners = new GrantOwners();
        Lease held = lease("tenant/a", 3L, "tenant/b", 5L);
        owners.granted("billing", held, T0);
        LeaseAccess access = access(acl("billing tenant/* lease"), owners);
        for (String op : List.of("renew", "upgrade", "release")) {
            LeaseAccess.Held h = access.held("billing", ProtoCodec.ref(held), op);
            assertEquals(held.names(), h.lease().names(), op);
            assertEquals(3L, h.lease().grant("tenant/a").generation());
            assertEquals(5L, h.lease().grant("tenant/b").generation());
            assertNull(h.otherOwner(), op);
        }
        // A grant the server has no owner for (it forgot it, or never granted it) is the engine's to judge.
        LeaseAccess.Held unknown = access.held("billing", ProtoCodec.ref(lease("tenant/c", 1L)), "renew");
        assertNull(unknown.otherOwner());
    }

    @Test
    void aForgedReferenceToAnotherPrincipalsGrantIsRefusedNamingBothPrincipals() throws Exception {
        GrantOwners owners = new GrantOwners();
        owners.granted("mallory", lease("public/a", 1L), T0);
        owners.granted("billing", lease("public/b", 7L), T0);
        LeaseAccess access = access(acl("* public/* lease"), owners);
        // The first grant is mallory's own; the second is billing's: the loop must reach it.
        LeaseRef forged = ProtoCodec.ref(lease("public/a", 1L, "public/b", 7L));
        for (String op : List.of("renew", "upgrade", "count as waiting the holder of")) {
            LeasePermissionDeniedException e = assertThrows(LeasePermissionDeniedException.class,
                    () -> access.held("mallory", forged, op));
            assertEquals("mallory", e.principal());
            assertEquals("public/b", e.name());
            assertEquals("lease", e.permission());
            assertEquals("principal 'mallory' may not " + op + " 'public/b' generation 7: that lease was granted to "
                    + "principal 'billing', and only the principal a lease was granted to may renew, upgrade or release "
                    + "it, whatever holder identity the request names", e.getMessage());
        }
        LeasePermissionDeniedException e = assertThrows(LeasePermissionDeniedException.class,
                () -> access.held("mallory", forged, "release"));
        assertEquals("admin", e.permission(), "a release of another's lease needs admin");
        assertEquals("principal 'mallory' may not release 'public/b' generation 7: that lease was granted to "
                + "principal 'billing', and only the principal a lease was granted to may renew, upgrade or release "
                + "it, whatever holder identity the request names (or a principal with 'admin' permission on every "
                + "name of the lease may release it; ask the operator)", e.getMessage());
    }

    @Test
    void anAdminMayReleaseAnotherPrincipalsLeaseButNotRenewOrUpgradeIt() throws Exception {
        GrantOwners owners = new GrantOwners();
        Lease billings = lease("tenant/a", 2L, "tenant/b", 4L);
        owners.granted("billing", billings, T0);
        LeaseAccess access = access(acl("* tenant/* lease", "ops tenant/* admin", "half tenant/a admin",
                "keeper * admin"), owners);
        LeaseAccess.Held h = access.held("ops", ProtoCodec.ref(billings), "release");
        assertEquals("billing", h.otherOwner());
        assertEquals(billings.names(), h.lease().names());
        LeaseAccess.Held own = access.held("billing", ProtoCodec.ref(billings), "release");
        assertNull(own.otherOwner(), "an admin's own lease is released as its own");
        assertEquals("principal 'ops' may not renew 'tenant/a' generation 2: that lease was granted to principal "
                + "'billing', and only the principal a lease was granted to may renew, upgrade or release it, whatever "
                + "holder identity the request names", assertThrows(LeasePermissionDeniedException.class,
                        () -> access.held("ops", ProtoCodec.ref(billings), "renew")).getMessage());
        // Admin on one name of two is not admin on the lease.
        LeasePermissionDeniedException half = assertThrows(LeasePermissionDeniedException.class,
                () -> access.held("half", ProtoCodec.ref(billings), "release"));
        assertEquals("admin", half.permission());
        assertTrue(half.getMessage().startsWith("principal 'half' may not release 'tenant/a' generation 2"),
                half.getMessage());
        // Admin without lease: it may release another's lease, but renew nothing (not even what nobody owns).
        assertEquals("billing", access.held("keeper", ProtoCodec.ref(billings), "release").otherOwner());
        LeasePermissionDeniedException noLease = assertThrows(LeasePermissionDeniedException.class,
                () -> access.held("keeper", ProtoCodec.ref(lease("other/x", 1L)), "renew"));
        assertEquals("lease", noLease.permission());
        assertEquals("other/x", noLease.name());
        assertEquals("keeper", noLease.principal());
    }

    @Test
    void aReferenceToNamesOutsideTheAclIsRefusedBeforeItsOwnerIsLookedAt() throws Exception {
        GrantOwners owners = new GrantOwners();
        Lease held = lease("tenant/a", 1L, "secret/b", 1L);
        owners.granted("billing", held, T0);
        LeaseAccess access = access(acl("billing tenant/* lease"), owners);
        LeasePermissionDeniedException e = assertThrows(LeasePermissionDeniedException.class,
                () -> access.held("billing", ProtoCodec.ref(held), "release"));
        assertEquals("secret/b", e.name());
        assertEquals("lease", e.permission());
        assertTrue(e.getMessage().startsWith("principal 'billing' may not lease 'secret/b': no rule of the access "
                + "control list "), e.getMessage());
    }

    @Test
    void anUndecodableReferenceIsRefusedNamingTheOperation() throws Exception {
        LeaseAccess access = access(AccessControl.allowAll(), new GrantOwners());
        LeaseRef mismatched = ProtoCodec.ref(lease("a", 1L, "b", 2L)).toBuilder().clearGenerations()
                .addGenerations(1).build();
        InvalidLeaseRequestException e = assertThrows(InvalidLeaseRequestException.class,
                () -> access.held("anonymous", mismatched, "renew"));
        assertEquals(Reason.NULL_ARGUMENT, e.reason());
        assertEquals("the renew request cannot be decoded: the lease reference has 2 names but 1 generations: send "
                + "one generation per name", e.getMessage());
        LeaseRef farDeadline = ProtoCodec.ref(lease("a", 1L)).toBuilder().setDeadlineMicros(-1).build();
        e = assertThrows(InvalidLeaseRequestException.class, () -> access.held("anonymous", farDeadline, "upgrade"));
        assertEquals(Reason.OUT_OF_RANGE, e.reason());
        assertTrue(e.getMessage().startsWith("the Upgrade request's lease.deadline_micros is -1, outside its range [0, "),
                e.getMessage());
    }

    // ------------------------------------------------------------------------------------------------ busy answers

    @Test
    void aBusyAnswerHidesTheHoldersFromAPrincipalWhoMayNotInspectTheName() throws Exception {
        LeaseAccess access = access(acl("* public/* lease", "ops public/* inspect"), new GrantOwners());
        Instant until = Micros.toInstant(T0);
        String held = "'public/a' is held (full exclusive by billing!w7 until " + until + ")";
        LeaseBusyException waited = new LeaseBusyException("public/a", until, held + "; waited 250 ms: retry later, "
                + "or wait longer");
        LeaseException shown = access.shownTo("mallory", waited);
        LeaseBusyException b = assertInstanceOf(LeaseBusyException.class, shown);
        assertEquals("public/a", b.name());
        assertEquals(until, b.heldUntil());
        assertEquals("'public/a' is held by another holder until " + until + " (the holders are told only to "
                + "principals who may inspect the name); waited 250 ms: retry later, or wait longer", b.getMessage());
        LeaseBusyException zero = new LeaseBusyException("public/a", null, held + "; not waiting (zero wait): retry "
                + "later, or wait longer");
        assertEquals("'public/a' is held by another holder (the holders are told only to principals who may inspect "
                + "the name); not waiting (zero wait): retry later, or wait longer",
                access.shownTo("mallory", zero).getMessage());
        LeaseBusyException bare = new LeaseBusyException("public/a", until, held);
        assertEquals("'public/a' is held by another holder until " + until + " (the holders are told only to "
                + "principals who may inspect the name): retry later, or wait longer",
                access.shownTo("mallory", bare).getMessage());
        // Shown as it is: to a principal who may inspect the name, and every answer that names no holder.
        assertSame(waited, access.shownTo("ops", waited));
        LeaseBusyException promised = new LeaseBusyException("public/a", null, "'public/a' is promised to 2 earlier "
                + "waiting request(s); waited 5 ms: retry later, or wait longer");
        assertSame(promised, access.shownTo("mallory", promised));
        LeaseBusyException noName = new LeaseBusyException(null, until, held);
        assertSame(noName, access.shownTo("mallory", noName));
        LeaseBusyException noMessage = new LeaseBusyException("public/a", until, null);
        assertSame(noMessage, access.shownTo("mallory", noMessage));
        InvalidLeaseRequestException other = new InvalidLeaseRequestException(Reason.NO_NAMES, held);
        assertSame(other, access.shownTo("mallory", other));
    }

    // ------------------------------------------------------------------------------------------------ decoding

    @Test
    void aReusedRequestIdIsRefusedWithTheIdAsAnUnsignedNumber() {
        InvalidLeaseRequestException e = RequestChecks.duplicateId(-1);
        assertEquals(Reason.DUPLICATE_REQUEST_ID, e.reason());
        assertEquals("request id 18446744073709551615 is already taken by a waiting acquisition of this session: "
                + "nothing was done; give every request of a session an id of its own (ids may be reused once "
                + "answered)", e.getMessage());
    }

    @Test
    void aSessionMessageWithoutAKnownRequestIsRefusedNamingTheProtocolVersion() {
        InvalidLeaseRequestException e = RequestChecks.unknownRequest(SessionRequest.getDefaultInstance());
        assertEquals(Reason.NULL_ARGUMENT, e.reason());
        assertEquals("the session message carries no request this server knows (field REQUEST_NOT_SET): use a "
                + "client of protocol version " + Protocol.VERSION, e.getMessage());
    }

    @Test
    void anAcquireIsDecodedAndItsRefusalsKeepTheirOwnReason() throws Exception {
        AcquireRequest ok = ProtoCodec.acquire(LeaseRequest.builder(HOLDER, "a", "b").leaseFor(Duration.ofSeconds(7))
                .build(), List.of("a", "b"));
        LeaseRequest r = RequestChecks.acquire(ok);
        assertEquals(HOLDER, r.holder());
        assertEquals(List.of("a", "b"), r.names());
        assertEquals(Duration.ofSeconds(7), r.leaseTime());
        InvalidLeaseRequestException e = assertThrows(InvalidLeaseRequestException.class,
                () -> RequestChecks.acquire(ok.toBuilder().setWaitMicros(-1).build()));
        assertEquals(Reason.INVALID_WAIT, e.reason());
        assertTrue(e.getMessage().startsWith("the Acquire request's wait_micros is -1, outside its range [0, "),
                e.getMessage());
    }

    @Test
    void anInspectLimitBelowZeroIsRefusedAndZeroIsInRange() {
        assertNull(RequestChecks.inspectLimit(0));
        assertNull(RequestChecks.inspectLimit(Integer.MAX_VALUE));
        InvalidLeaseRequestException e = RequestChecks.inspectLimit(-1);
        assertEquals(Reason.OUT_OF_RANGE, e.reason());
        assertEquals("the Inspect request's limit is -1, outside its range [0, 2147483647]: nothing was done; send a "
                + "value within the range", e.getMessage());
        assertTrue(RequestChecks.inspectLimit(Integer.MIN_VALUE).getMessage().contains("limit is -2147483648,"));
    }

    @Test
    void aResetForTestTakesEachSettingOrRefusesItNamingTheField() throws Exception {
        EngineConfig base = EngineConfig.defaults();
        ResetForTestRequest req = ResetForTestRequest.newBuilder().setMaxLeaseMicros(60_000_000)
                .setGraceMicros(2_000_000).setQuietPeriodMicros(3_000_000).setHistoryPerName(9)
                .setMaxWaitersPerName(11).build();
        EngineConfig c = RequestChecks.resetConfig(base, req);
        assertEquals(Duration.ofSeconds(60), c.maxLeaseDuration());
        assertEquals(Duration.ofSeconds(2), c.grace());
        assertEquals(Duration.ofSeconds(3), c.quietPeriod());
        assertEquals(9, c.historyPerName());
        assertEquals(11, c.maxWaitersPerName());
        assertNull(RequestChecks.resetStart(req), "no start: the clock keeps its time");
        assertEquals(Micros.toInstant(T0), RequestChecks.resetStart(req.toBuilder().setStartMicros(T0).build()));
        assertEquals(Instant.EPOCH, RequestChecks.resetStart(req.toBuilder().setStartMicros(0).build()));
        for (String field : List.of("max_lease_micros", "grace_micros", "quiet_period_micros")) {
            ResetForTestRequest.Builder b = req.toBuilder();
            switch (field) {
                case "max_lease_micros" -> b.setMaxLeaseMicros(-1);
                case "grace_micros" -> b.setGraceMicros(-1);
                default -> b.setQuietPeriodMicros(-1);
            }
            InvalidLeaseRequestException e = assertThrows(InvalidLeaseRequestException.class,
                    () -> RequestChecks.resetConfig(base, b.build()));
            assertEquals(Reason.OUT_OF_RANGE, e.reason());
            assertTrue(e.getMessage().startsWith("the ResetForTest request's " + field + " is -1, outside its range"),
                    e.getMessage());
        }
        InvalidLeaseRequestException e = assertThrows(InvalidLeaseRequestException.class,
                () -> RequestChecks.resetStart(req.toBuilder().setStartMicros(-1).build()));
        assertEquals(Reason.OUT_OF_RANGE, e.reason());
        assertTrue(e.getMessage().startsWith("the ResetForTest request's start_micros is -1, outside its range"),
                e.getMessage());
    }
}
