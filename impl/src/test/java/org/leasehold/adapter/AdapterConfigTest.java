package org.leasehold.adapter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
                maxNames, null, null, null, inDoubt, null, null, null, null, null, null);
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
                        null, null, null, null, null, null, null, null, null, null)));
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
                null, null, null, null, intervalMillis, null, null, null, null, null);
    }

    /** The settings with the defaults, except the audit and compaction properties (null: the default). */
    private static AdapterConfig audit(Path root, String service, String keyFile, Long bound, Long compaction) {
        return AdapterConfig.from(root.toString(), null, service, null, null, null, null, null, null, null, null, null,
                null, null, null, null, null, keyFile, bound, compaction, null, null);
    }

    /** The settings with the defaults, except grace and the compaction properties (null: the default). */
    private static AdapterConfig compaction(Path root, Long grace, Long interval, Long horizon, Long retention) {
        return AdapterConfig.from(root.toString(), null, null, null, grace, null, null, null, null, null, null, null,
                null, null, null, null, null, null, null, interval, horizon, retention);
    }

    @Test
    void theSigningKeyFileIsForTheEmbeddedEngineOnly() throws Exception {
        Path root = Files.createDirectories(Path.of("target", "adapter-config-test"));
        assertEquals(null, audit(root, null, null, null, null).signingKeyFile());
        assertEquals(Path.of("/etc/leasehold/engine.pem"), audit(root, null, " /etc/leasehold/engine.pem ", null, null)
                .signingKeyFile());
        assertEquals("SigningKeyFile is set, but LeaseService is 'remote:127.0.0.1:7400': only the embedded engine "
                + "signs with the adapter's key; configure the key of the lease service instead, or remove "
                + "SigningKeyFile", refused(() -> audit(root, "remote:127.0.0.1:7400", "/etc/k.pem", null, null)));
        assertEquals("SigningKeyFile '/etc/a\u0000b' is not a valid path: Nul character not allowed",
                refused(() -> audit(root, null, "/etc/a\u0000b", null, null)));
    }

    @Test
    void theSignedTimeBoundIsOneMillisecondToAnHour() throws Exception {
        Path root = Files.createDirectories(Path.of("target", "adapter-config-test"));
        assertEquals(1_000, audit(root, null, null, null, null).signedTimeBound().toMillis());
        assertEquals(1, audit(root, null, null, 1L, null).signedTimeBound().toMillis());
        assertEquals(3_600_000, audit(root, null, null, 3_600_000L, null).signedTimeBound().toMillis());
        String rule = "; use 1 to 3600000 (one hour); the default is 1000: how far a message's timestamp may lie from "
                + "the signed time its leases' witnesses carry";
        assertEquals("SignedTimeBoundMillis is 0" + rule, refused(() -> audit(root, null, null, 0L, null)));
        assertEquals("SignedTimeBoundMillis is 3600001" + rule, refused(() -> audit(root, null, null, 3_600_001L,
                null)));
    }

    @Test
    void theCompactionIntervalIsZeroOrFromOneSecondToADay() throws Exception {
        Path root = Files.createDirectories(Path.of("target", "adapter-config-test"));
        assertEquals(0, audit(root, null, null, null, null).compactionInterval().toMillis());
        assertEquals(1_000, audit(root, null, null, null, 1_000L).compactionInterval().toMillis());
        assertEquals(86_400_000, audit(root, null, null, null, 86_400_000L).compactionInterval().toMillis());
        String rule = "; use 0 (no background compaction; the default) or 1000 to 86400000 (one day)";
        assertEquals("CompactionIntervalMillis is 999" + rule, refused(() -> audit(root, null, null, null, 999L)));
        assertEquals("CompactionIntervalMillis is -1" + rule, refused(() -> audit(root, null, null, null, -1L)));
        assertEquals("CompactionIntervalMillis is 86400001" + rule, refused(() -> audit(root, null, null, null,
                86_400_001L)));
    }

    @Test
    void theCompactionHorizonExceedsGracePlusClockErrorAndRetentionNeedsBackgroundCompaction() throws Exception {
        Path root = Files.createDirectories(Path.of("target", "adapter-config-test"));
        AdapterConfig defaults = compaction(root, null, null, null, null);
        assertEquals(3_600_000, defaults.compactionHorizon().toMillis());
        assertEquals(0, defaults.retentionDelay().toMillis(), "buckets are kept unless asked");
        assertEquals(2_501, compaction(root, null, null, 2_501L, null).compactionHorizon().toMillis());
        assertEquals("CompactionHorizonMillis is 2500; use more than GraceMillis plus MaxClockErrorMillis (2500; a "
                + "younger bucket may still be written to or sealed) and at most 30 days (2592000000); the default is "
                + "3600000", refused(() -> compaction(root, null, null, 2_500L, null)));
        assertEquals(5_501, compaction(root, 5_000L, null, 5_501L, null).compactionHorizon().toMillis());
        assertTrue(refused(() -> compaction(root, 5_000L, null, 5_500L, null)).startsWith("CompactionHorizonMillis is "
                + "5500; use more than GraceMillis plus MaxClockErrorMillis (5500;"), "the bound follows GraceMillis");
        assertTrue(refused(() -> compaction(root, null, null, 2_592_000_001L, null)).startsWith(
                "CompactionHorizonMillis is 2592000001;"));

        AdapterConfig retained = compaction(root, null, 60_000L, null, 3_600_000L);
        assertEquals(3_600_000, retained.retentionDelay().toMillis());
        String rule = "; use 0 (keep every bucket's files; the default) or 1000 to 31536000000 (365 days), longer than "
                + "any read may take";
        assertEquals("RetentionDelayMillis is 999" + rule, refused(() -> compaction(root, null, 60_000L, null, 999L)));
        assertEquals("RetentionDelayMillis is -1" + rule, refused(() -> compaction(root, null, 60_000L, null, -1L)));
        assertEquals("RetentionDelayMillis is 31536000001" + rule, refused(() -> compaction(root, null, 60_000L, null,
                31_536_000_001L)));
        assertEquals("RetentionDelayMillis is 3600000 but CompactionIntervalMillis is 0: buckets are removed only by "
                + "background compaction; set CompactionIntervalMillis too (for example 60000), or RetentionDelayMillis "
                + "to 0", refused(() -> compaction(root, null, null, null, 3_600_000L)));
    }
}
