package org.leasehold.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Path;
import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.leasehold.engine.EngineConfig;
import org.leasehold.remote.RemoteClientConfig;
import org.leasehold.store.BagStoreConfig;

/**
 * The shared checks say what was wrong, the accepted range and what to do, in one shape, and every settings class of
 * the module speaks through them.
 */
class CheckTest {

    private static String refused(Executable call) {
        return assertThrows(IllegalArgumentException.class, call).getMessage();
    }

    @Test
    void eachCheckPassesItsValueThroughOrNamesTheSettingTheValueAndTheRange() {
        Duration second = Duration.ofSeconds(1);
        assertSame(second, Check.positive("callTimeout", second));
        assertEquals("callTimeout is PT0S; it must be a positive duration", refused(() -> Check.positive("callTimeout",
                Duration.ZERO)));
        assertEquals("callTimeout is null; it must be a positive duration", refused(() -> Check.positive("callTimeout",
                null)));
        assertSame(Duration.ZERO, Check.notNegative("grace", Duration.ZERO));
        assertEquals("grace is PT-1S; it must be zero or positive", refused(() -> Check.notNegative("grace",
                second.negated())));
        assertEquals("ttl is PT48H; keep it short", refused(() -> Check.positiveAtMost("ttl", Duration.ofDays(2),
                Duration.ofDays(1), "keep it short")));
        assertEquals(5, Check.atLeast("x", 5, 5, ""));
        assertEquals("x is 4; use at least 5 (default 8)", refused(() -> Check.atLeast("x", 4, 5, " (default 8)")));
        assertEquals("x is -1; use 0 or more", refused(() -> Check.atLeast("x", -1L, 0L, "")));
        assertEquals(64, Check.inRange("connections", 64, 1, 64, ""));
        assertEquals("connections is 65; use 1 to 64 per server", refused(() -> Check.inRange("connections", 65, 1, 64,
                " per server")));
        assertEquals("size is 1023; use 1 KiB to 1 MiB", refused(() -> Check.within("size", 1023, 1024, 1 << 20,
                "use 1 KiB to 1 MiB")));
        assertEquals("transport is null; use GRPC", refused(() -> Check.present("transport", null, "use GRPC")));
        assertEquals("/srv/bags", Check.text("BagStoreRoot", " /srv/bags ", "give a directory"));
        assertEquals("BagStoreRoot is not set: give a directory", refused(() -> Check.text("BagStoreRoot", " ",
                "give a directory")));
        assertEquals(12, Check.integer("connections", " 12 ", ""));
        assertEquals("connections 'four' is not an integer; give a number", refused(() -> Check.integer("connections",
                "four", "; give a number")));
        assertEquals(Duration.ofNanos(50_000), Check.duration("spinWait", "50us"));
        assertEquals(Duration.ofMinutes(2), Check.duration("spinWait", "PT2M"));
        assertEquals("spinWait 'soon' is not a duration; use 500ms, 5s, 2m, 1h or ISO-8601 such as PT5S",
                refused(() -> Check.duration("spinWait", "soon")));
        assertEquals("spinWait is empty; give a duration such as 500ms, 5s, 2m or PT5S",
                refused(() -> Check.duration("spinWait", "")));
    }

    @Test
    void theEngineTheStoreAndTheRemoteClientRefuseInTheSharedShape() {
        assertEquals("historyPerName is 0; use at least 1 entry (the oldest is dropped first)",
                refused(() -> EngineConfig.defaults().withHistoryPerName(0).validate()));
        assertEquals("maxMetadataChars is -1; use 0 or more",
                refused(() -> EngineConfig.defaults().withMaxMetadataChars(-1).validate()));
        assertEquals("maxLeaseDuration is PT48H; leases are meant to be short: use at most one day (the default is 10 s)",
                refused(() -> EngineConfig.defaults().withMaxLeaseDuration(Duration.ofDays(2)).validate()));
        assertEquals("idleRetention is PT0S; it must be a positive duration",
                refused(() -> EngineConfig.defaults().withIdleRetention(Duration.ZERO).validate()));
        Path root = Path.of("target");
        assertEquals("maxFrameBytes is 100; use 1 KiB to 256 MiB",
                refused(() -> BagStoreConfig.builder(root).maxFrameBytes(100).build()));
        assertEquals("maxBatchBytes is 0; use at least 1",
                refused(() -> BagStoreConfig.builder(root).maxBatchBytes(0).build()));
        assertEquals("metronomeLookback is PT-1S; it must be a positive duration",
                refused(() -> BagStoreConfig.builder(root).metronomeLookback(Duration.ofSeconds(-1)).build()));
        assertEquals("keepAliveTime is PT0S; it must be a positive duration",
                refused(() -> RemoteClientConfig.builder("127.0.0.1:7420").keepAliveTime(Duration.ZERO).build()));
        assertEquals("transport is null; use SOCKET (the default) or GRPC",
                refused(() -> RemoteClientConfig.builder("127.0.0.1:7420").transport(null).build()));
        assertEquals("callTimeout '5 seconds' is not a duration; use 500ms, 5s, 2m, 1h or ISO-8601 such as PT5S",
                refused(() -> Check.duration("callTimeout", "5 seconds")));
    }
}
