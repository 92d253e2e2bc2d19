package org.leasehold.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.leasehold.engine.EngineConfig;

/** The server's settings are refused in the shared shape: the option, its value, the accepted range. */
class ServerConfigTest {
    private static final ServerConfig DEFAULTS = ServerConfig.loopback(EngineConfig.defaults());

    private static String refused(Executable call) {
        return assertThrows(IllegalArgumentException.class, call).getMessage();
    }

    @Test
    void eachLimitIsNamedWithItsValue() {
        assertEquals("--max-waiters is 0; use at least 1",
                refused(() -> DEFAULTS.withLimits(0, 1, 1, 1 << 20).validate()));
        assertEquals("--max-waiters-per-connection is -2; use at least 1",
                refused(() -> DEFAULTS.withLimits(1, -2, 1, 1 << 20).validate()));
        assertEquals("--max-calls-per-connection is 0; use at least 1",
                refused(() -> DEFAULTS.withLimits(1, 1, 0, 1 << 20).validate()));
        ServerConfig.SocketSettings socket = ServerConfig.SocketSettings.loopback();
        assertEquals("--socket-max-connections is 0; use at least 1", refused(() -> DEFAULTS.withSocket(
                new ServerConfig.SocketSettings(socket.listen(), 0, socket.writeTimeout(), socket.spinWait())).validate()));
        assertEquals("--socket-write-timeout is PT0S; it must be a positive duration", refused(() -> DEFAULTS.withSocket(
                new ServerConfig.SocketSettings(socket.listen(), 1, Duration.ZERO, socket.spinWait())).validate()));
        assertEquals(DEFAULTS, DEFAULTS.validate());
    }
}
