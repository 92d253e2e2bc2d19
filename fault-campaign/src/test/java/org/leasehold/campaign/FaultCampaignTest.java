package org.leasehold.campaign;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;

/**
 * The fault campaign as a test: {@code campaign.minutes} of faults (3 by default, the CI run) from the seed
 * {@code campaign.seed} (a new one, printed, when empty), then the checker's verdict. It fails on any violation, and
 * when a run of at least 3 minutes injected fewer than 50 faults. The summary and the fault trace are written to
 * {@code target/campaign/summary.txt}; {@code run.sh} starts it with other durations and seeds.
 */
class FaultCampaignTest {

    @Test
    void faultsAllAtOnceBreakNoInvariant() throws Exception {
        double minutes = Double.parseDouble(System.getProperty("campaign.minutes", "3"));
        String seedText = System.getProperty("campaign.seed", "");
        long seed = seedText.isBlank() ? new SecureRandom().nextLong() : Long.parseLong(seedText.trim());
        System.out.println("fault campaign seed " + seed + " (replay the same faults with: fault-campaign/run.sh --seed "
                + seed + " --minutes " + minutes + ")");
        Path dir = Path.of("target", "campaign");
        if (Files.exists(dir.resolve("store"))) {
            // A previous run's files: the campaign wants a fresh directory.
            dir = Path.of("target", "campaign-" + System.nanoTime());
        }
        Campaign.Report r = new Campaign(dir, seed, Duration.ofMillis((long) (minutes * 60_000))).run();
        System.out.println(r.text());
        r.write(dir.resolve("summary.txt"));
        assertEquals(List.of(), r.outcome().violations(), "violations (seed " + seed + "); see " + dir.resolve("summary.txt"));
        if (minutes >= 3) {
            assertTrue(r.totalFaults() >= 50, "at least 50 faults in a run of 3 minutes or more: " + r.totalFaults());
        }
        assertTrue(r.outcome().counts().get("acknowledged messages found") > 0, "the writers wrote something");
    }
}
