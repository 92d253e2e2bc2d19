package org.leasehold.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.leasehold.engine.EngineConfig;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.remote.RemoteClientConfig;
import org.leasehold.remote.RemoteLeaseService;
import org.leasehold.server.LeaseServer;
import org.leasehold.server.ServerConfig;
import org.leasehold.time.SystemTimeSource;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * {@code leases inspect} against a real lease server started in this JVM on 127.0.0.1 at a port chosen at run time:
 * holders, history and unknown names, prefixes, a bearer token, an unreachable server and a malformed address.
 */
class LeasesInspectTest {
    private static final String TOKEN = "0123456789abcdef0123456789abcdef";

    private final SystemTimeSource time = new SystemTimeSource("cli-test-timer");
    private LeaseServer server;
    private RemoteLeaseService client;

    private void start(ServerConfig config) throws Exception {
        server = LeaseServer.start(config);
        RemoteClientConfig.Builder b = RemoteClientConfig.builder(server.address());
        if (config.tokens() != null) {
            b.token(TOKEN);
        }
        client = new RemoteLeaseService(b.build());
    }

    private static ServerConfig plain() {
        return ServerConfig.loopback(EngineConfig.defaults().withQuietPeriod(Duration.ZERO));
    }

    @AfterEach
    void stop() {
        if (client != null) {
            client.close();
        }
        if (server != null) {
            server.close();
        }
        time.close();
    }

    private CliRun run(String... args) {
        return CliRun.of(time, args);
    }

    @Test
    void inspectShowsHoldersHistoryAndUnknownNames() throws Exception {
        start(plain());
        Lease held = client.acquire(LeaseRequest.builder(new HolderId("billing-1", "t1"), "account/7").build());
        Lease done = client.acquire(LeaseRequest.builder(new HolderId("billing-2", "t2"), "account/8").build());
        client.release(done, null, "stored in orders");

        CliRun r = run("leases", "inspect", "--server", server.address(), "account/7", "account/8", "nosuch", "--json");
        assertEquals(0, r.code(), r::toString);
        assertEquals("", r.err());
        List<JsonNode> names = r.json();
        assertEquals(3, names.size(), r::toString);

        JsonNode a = names.get(0);
        assertEquals("account/7", a.get("name").asText());
        assertTrue(a.get("known").asBoolean());
        assertEquals(held.grants().get(0).generation(), a.get("generation").asLong());
        assertEquals(1, a.get("holders").size());
        JsonNode h = a.get("holders").get(0);
        assertEquals("billing-1", h.get("process").asText());
        assertEquals("t1", h.get("owner").asText());
        assertEquals("EXCLUSIVE", h.get("mode").asText());
        assertEquals("FULL", h.get("kind").asText());
        assertEquals(held.grants().get(0).generation(), h.get("generation").asLong());
        assertEquals(held.deadline().toString(), h.get("deadline").asText());
        assertEquals(held.grantedAt().toString(), h.get("grantedAt").asText());
        assertTrue(h.get("inDoubtUntil").isNull());

        JsonNode b = names.get(1);
        assertEquals("account/8", b.get("name").asText());
        assertEquals(0, b.get("holders").size());
        JsonNode last = b.get("history").get(b.get("history").size() - 1);
        assertEquals("RELINQUISHED", last.get("ending").asText());
        assertEquals("stored in orders", last.get("metadata").asText());
        assertEquals("billing-2", last.get("process").asText());
        assertEquals(done.grants().get(0).generation(), last.get("generation").asLong());

        assertEquals("nosuch", names.get(2).get("name").asText());
        assertFalse(names.get(2).get("known").asBoolean());

        List<JsonNode> prefixed = run("leases", "inspect", "--server", server.address(), "--prefix", "account/",
                "--json").json();
        assertEquals(List.of("account/7", "account/8"), prefixed.stream().map(n -> n.get("name").asText()).toList());

        CliRun text = run("leases", "inspect", "--server", server.address(), "account/7", "nosuch");
        assertEquals(0, text.code(), text::toString);
        assertTrue(text.lines().get(0).startsWith("account/7\tgeneration " + held.grants().get(0).generation()
                + "\tfloor "), text::toString);
        assertTrue(text.lines().get(1).startsWith("  holder billing-1!t1\tEXCLUSIVE\tFULL\t"), text::toString);
        assertEquals("nosuch\tunknown to the server (never leased, or forgotten)", text.lines().get(2));
    }

    @Test
    void aTokenIsSentFromAFileAndItsAbsenceIsOneLine() throws Exception {
        Path dir = TestStore.BASE.resolve("inspect-token");
        TestStore.deleteTree(dir);
        Files.createDirectories(dir);
        Path tokens = Files.writeString(dir.resolve("tokens"), "ops " + TOKEN + "\n");
        Path tokenFile = Files.writeString(dir.resolve("ops.token"), TOKEN + "\n");
        start(plain().withSecurity(null, null, null, tokens, null));
        client.acquire(LeaseRequest.builder(new HolderId("p", "t"), "x").build());

        CliRun without = run("leases", "inspect", "--server", server.address(), "x");
        assertEquals(1, without.code(), without::toString);
        assertEquals(1, without.errLines().size(), without::toString);
        assertTrue(without.err().startsWith("leasehold: cannot inspect 'x' at lease server " + server.address() + ": "),
                without::toString);

        CliRun with = run("leases", "inspect", "--server", server.address(), "--token-file", tokenFile.toString(), "x",
                "--json");
        assertEquals(0, with.code(), with::toString);
        assertEquals("p", with.json().get(0).get("holders").get(0).get("process").asText());
    }

    @Test
    void anUnreachableServerIsOneLineAndABadAddressAUsageError() throws Exception {
        start(plain());
        String address = server.address();
        client.close();
        client = null;
        server.close();
        server = null;

        CliRun r = run("leases", "inspect", "--server", address, "--call-timeout", "2s", "x");
        assertEquals(1, r.code(), r::toString);
        assertEquals(1, r.errLines().size(), r::toString);
        assertTrue(r.err().startsWith("leasehold: cannot inspect 'x' at lease server " + address + ": "), r::toString);
        assertTrue(r.err().contains("is unreachable or did not answer in time"), r::toString);
        assertEquals("", r.out());

        CliRun bad = run("leases", "inspect", "--server", "nohost", "x");
        assertEquals(2, bad.code(), bad::toString);
        assertEquals(List.of("leasehold: server address 'nohost' is not host:port, for example 127.0.0.1:7420",
                "Try 'leasehold leases inspect --help' for more information."), bad.errLines());

        Path notPem = TestStore.BASE.resolve("not-a-certificate.pem");
        Files.createDirectories(notPem.getParent());
        Files.writeString(notPem, "not a certificate\n");
        CliRun badTrust = run("leases", "inspect", "--server", address, "--tls-trust", notPem.toString(), "x");
        assertEquals(2, badTrust.code(), badTrust::toString);
        assertTrue(badTrust.errLines().get(0).startsWith("leasehold: cannot set up TLS to " + address + " from " + notPem),
                badTrust::toString);
        CliRun noToken = run("leases", "inspect", "--server", address, "--token-file", notPem + ".absent", "x");
        assertEquals(2, noToken.code(), noToken::toString);
        assertTrue(noToken.errLines().get(0).startsWith("leasehold: cannot read the token file "), noToken::toString);

        CliRun noName = run("leases", "inspect", "--server", address);
        assertEquals(2, noName.code(), noName::toString);
    }
}
