package org.leasehold.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.remote.RemoteClientConfig;
import org.leasehold.remote.RemoteLeaseService;

import picocli.CommandLine;

/**
 * The state directory of real server processes on a test clock: a restart with the clock 60 s behind grants nothing
 * until the clock has passed the time mark plus the quiet period (log, /ready and the metric say so), then takes no
 * generation or floor back; a damaged mark, a directory that cannot be used or is in use, and the explicit option to
 * keep none.
 */
class ClockStepRestartTest {
    private static final HolderId A = new HolderId("billing", "a");
    private static final HolderId B = new HolderId("billing", "b");
    private static final Instant T = Instant.parse("2026-03-01T10:00:00Z");
    private static final Duration QUIET = Duration.ofSeconds(12);
    private static final Pattern BEHIND = Pattern.compile("leasehold_clock_behind_seconds ([0-9.Ee+-]+)");

    private static RemoteLeaseService client(ServerProcess server) {
        return new RemoteLeaseService(RemoteClientConfig.builder(server.address()).callTimeout(Duration.ofSeconds(5))
                .build());
    }

    private static HttpResponse<String> get(ServerProcess server, String path) throws Exception {
        HttpClient http = HttpClient.newHttpClient();
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.httpPort() + path)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static double clockBehind(ServerProcess server) throws Exception {
        Matcher m = BEHIND.matcher(get(server, "/metrics").body());
        assertTrue(m.find(), "the metric leasehold_clock_behind_seconds is exported");
        return Double.parseDouble(m.group(1));
    }

    @Test
    void aRestartWithTheClock60sBehindWaitsForTheMarkAndTakesNoGenerationOrFloorBack() throws Exception {
        Path state = ServerProcess.freshStateDir("clock-step");
        long gen;
        Instant floor;
        Instant lastDeadline;
        Instant stoppedAt;
        try (ServerProcess first = ServerProcess.start("clock-step-1", "--test-clock=" + T, "--state-dir=" + state);
                TestClockClient clock = new TestClockClient(first.address());
                RemoteLeaseService leases = client(first)) {
            assertEquals(0.0, clockBehind(first));
            clock.advance(QUIET);
            Lease a = leases.acquire(LeaseRequest.builder(A, "step/x").build());
            clock.advance(Duration.ofSeconds(3));
            leases.release(a, a.grantedAt().plusMillis(1), null);
            clock.advance(Duration.ofSeconds(3));
            Lease held = leases.acquire(LeaseRequest.builder(A, "step/x").build());
            gen = held.grant("step/x").generation();
            floor = held.floor();
            lastDeadline = held.deadline();
            stoppedAt = clock.advance(Duration.ofSeconds(1));
            first.kill();
        }
        Instant restartAt = stoppedAt.minusSeconds(60);
        try (ServerProcess second = ServerProcess.start("clock-step-2", "--test-clock=" + restartAt,
                "--state-dir=" + state);
                TestClockClient clock = new TestClockClient(second.address());
                RemoteLeaseService leases = client(second)) {
            double behind = clockBehind(second);
            assertTrue(behind >= 58 && behind <= 60, "clock behind the mark: " + behind + " s");
            HttpResponse<String> ready = get(second, "/ready");
            assertEquals(503, ready.statusCode());
            assertTrue(ready.body().contains("\"clockBehindSeconds\":") && ready.body().contains("timeMarkHorizon"),
                    ready.body());
            assertTrue(second.log().contains("LEASEHOLD-1010"), second.log());
            clock.advance(QUIET);
            LeaseServiceUnavailableException e = assertThrows(LeaseServiceUnavailableException.class,
                    () -> leases.acquire(LeaseRequest.builder(B, "step/x").build()));
            assertTrue(e.getMessage().contains("time mark"), e.getMessage());
            Instant from = e.availableAt();
            assertTrue(from.isAfter(stoppedAt.plus(QUIET)), "grants wait for the clock to pass the mark plus the quiet "
                    + "period: " + from);
            clock.advance(Duration.between(clock.advance(Duration.ZERO), from.minusMillis(1)));
            assertEquals(503, get(second, "/ready").statusCode());
            clock.advance(Duration.ofMillis(1));
            assertEquals(200, get(second, "/ready").statusCode());
            assertEquals(0.0, clockBehind(second));
            Lease after = leases.acquire(LeaseRequest.builder(B, "step/x").build());
            assertTrue(after.grant("step/x").generation() > gen, "generation " + after.grant("step/x").generation()
                    + " after " + gen + " before the restart");
            assertTrue(after.floor().isAfter(floor), "floor " + after.floor() + " after " + floor);
            assertFalse(after.floor().isBefore(lastDeadline), "floor " + after.floor() + " not below the last deadline "
                    + lastDeadline);
        }
    }

    @Test
    void aDamagedTimeMarkIsRefusedWithWhatToDo() throws Exception {
        Path state = ServerProcess.freshStateDir("damaged-mark");
        try (ServerProcess first = ServerProcess.start("damaged-mark-1", "--test-clock=" + T, "--state-dir=" + state);
                TestClockClient clock = new TestClockClient(first.address())) {
            clock.advance(Duration.ofSeconds(5));
            first.kill();
        }
        Path mark = state.resolve("time-mark").resolve("mark.1");
        assertTrue(Files.size(mark) >= 64, "records every 2 s");
        try (FileChannel ch = FileChannel.open(mark, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            long last = ch.size() / 32 * 32 - 32;
            ch.write(ByteBuffer.wrap(new byte[] {1, 2, 3}), last + 8);
            ch.write(ByteBuffer.wrap(new byte[] {1, 2, 3}), last - 32 + 8);
        }
        IOException e = assertThrows(IOException.class,
                () -> ServerProcess.start("damaged-mark-2", "--test-clock=" + T, "--state-dir=" + state).close());
        assertTrue(e.getMessage().contains("LEASEHOLD-2900") && e.getMessage().contains("is damaged")
                && e.getMessage().contains("move the directory"), e.getMessage());
    }

    @Test
    void aStateDirectoryThatCannotBeUsedOrIsInUseIsRefusedAndNoStateDirIsExplicit() throws Exception {
        Path file = ServerProcess.freshStateDir("not-a-dir");
        Files.createDirectories(file.getParent());
        Files.writeString(file, "a file, not a directory");
        IOException notDir = assertThrows(IOException.class,
                () -> ServerProcess.start("state-not-a-dir", "--state-dir=" + file).close());
        assertTrue(notDir.getMessage().contains("cannot be used") && notDir.getMessage().contains("--no-state-dir"),
                notDir.getMessage());

        Path shared = ServerProcess.freshStateDir("shared");
        try (ServerProcess one = ServerProcess.start("state-shared-1", "--state-dir=" + shared)) {
            IOException inUse = assertThrows(IOException.class,
                    () -> ServerProcess.start("state-shared-2", "--state-dir=" + shared).close());
            assertTrue(inUse.getMessage().contains("another lease server uses the state directory"),
                    inUse.getMessage());
            assertTrue(one.isAlive());
        }

        try (ServerProcess none = ServerProcess.start("state-none", "--no-state-dir")) {
            assertTrue(none.log().contains("LEASEHOLD-2020"), none.log());
            assertTrue(get(none, "/health").body().contains("\"stateDir\":\"(none)\""));
        }

        StringWriter err = new StringWriter();
        LeaseServerMain main = new LeaseServerMain();
        CommandLine cmd = new CommandLine(main).setErr(new PrintWriter(err));
        cmd.parseArgs();
        assertEquals(Path.of("leasehold-state"), main.toConfig().stateDir(), "the default: under the working directory");
        main = new LeaseServerMain();
        new CommandLine(main).parseArgs("--no-state-dir");
        assertEquals(null, main.toConfig().stateDir());
        main = new LeaseServerMain();
        new CommandLine(main).parseArgs("--no-state-dir", "--state-dir=x");
        LeaseServerMain both = main;
        IllegalArgumentException contradiction = assertThrows(IllegalArgumentException.class, both::toConfig);
        assertTrue(contradiction.getMessage().contains("contradict"), contradiction.getMessage());
    }
}
