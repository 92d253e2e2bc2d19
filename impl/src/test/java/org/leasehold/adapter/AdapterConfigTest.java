package org.leasehold.adapter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** The adapter's properties are refused in the shared shape: the property, its value, the accepted range. */
class AdapterConfigTest {

    private static String refused(Executable call) {
        return assertThrows(IllegalArgumentException.class, call).getMessage();
    }

    /** The settings with the defaults, except the four given (null: the default). */
    private static AdapterConfig with(Path root, Long maxLease, Long grace, Integer maxNames, Long inDoubt) {
        return AdapterConfig.from(root.toString(), null, null, maxLease, grace, null, null, null, null, null, null,
                maxNames, null, null, null, inDoubt, null);
    }

    @Test
    void outOfRangePropertiesNameTheValueAndTheRange() throws Exception {
        Path root = Files.createDirectories(Path.of("target", "adapter-config-test"));
        assertEquals(10_000, with(root, null, null, null, null).maxLease().toMillis());
        assertEquals("MaxLeaseMillis is 0; use a positive duration of at most one day (86400000); the default is 10000",
                refused(() -> with(root, 0L, null, null, null)));
        assertEquals("GraceMillis is -1; use 0 or more (default 2000)", refused(() -> with(root, null, -1L, null, null)));
        assertEquals("MaxNamesPerUnit is 1001; use 1 to 1000 (default 100)",
                refused(() -> with(root, null, null, 1001, null)));
        assertEquals("InDoubtHoldMillis is 9999; use at least MaxLeaseMillis (10000) and at most one day (86400000); "
                + "the default, 300000, covers an application server's restart",
                refused(() -> with(root, null, null, null, 9_999L)));
        assertEquals("BagStoreRoot is not set: give the directory of the bag store (a shared file system mount for a "
                + "fleet), which must exist and be writable",
                refused(() -> AdapterConfig.from(" ", null, null, null, null, null, null, null, null, null, null, null,
                        null, null, null, null, null)));
    }

    @Test
    void theViewBuildIntervalIsZeroOrFromOneSecondToADay() throws Exception {
        Path root = Files.createDirectories(Path.of("target", "adapter-config-test"));
        assertEquals(60_000, views(root, null).viewBuildInterval().toMillis());
        assertEquals(0, views(root, 0L).viewBuildInterval().toMillis());
        assertEquals(1_000, views(root, 1_000L).viewBuildInterval().toMillis());
        String rule = "; use 0 (the adapter builds no snapshot; the application does) or 1000 to 86400000 (one day); "
                + "the default is 60000";
        assertEquals("ViewBuildIntervalMillis is 999" + rule, refused(() -> views(root, 999L)));
        assertEquals("ViewBuildIntervalMillis is -1" + rule, refused(() -> views(root, -1L)));
        assertEquals("ViewBuildIntervalMillis is 86400001" + rule, refused(() -> views(root, 86_400_001L)));
    }

    private static AdapterConfig views(Path root, Long intervalMillis) {
        return AdapterConfig.from(root.toString(), null, null, null, null, null, null, null, null, null, null, null,
                null, null, null, null, intervalMillis);
    }
}
