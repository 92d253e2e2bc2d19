package org.leasehold.campaign;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.leasehold.audit.AuditFormatException;
import org.leasehold.audit.KeySet;
import org.leasehold.audit.PublishedKeys;
import org.leasehold.cli.verify.Finding;
import org.leasehold.cli.verify.LogVerifier;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.store.CampaignChild;
import org.leasehold.time.Micros;

/**
 * {@code leasehold verify} over the campaign's store, after the checker: the lease server published its key into the
 * store, every frame carries the witnesses of its leases, and the verifier (which shares no code with the writers or
 * the checker) must prove every signature, chain, lease range and signed time. Its only expected findings are the
 * torn tails the campaign tears on purpose (warnings): their number must equal the checker's count of torn tails in
 * the stored bytes. Any other finding, error or warning, is a violation.
 */
final class AuditCheck {
    private AuditCheck() {
    }

    static CampaignChecker.Outcome verify(Path store, String log, CampaignChecker.Outcome checked) throws IOException {
        Map<String, Long> counts = new LinkedHashMap<>(checked.counts());
        List<String> violations = new ArrayList<>(checked.violations());
        KeySet keys;
        try {
            keys = PublishedKeys.load(new NfsSafeFiles(), store.resolve(".leasehold").resolve("keys"));
        } catch (AuditFormatException e) {
            violations.add("verify: the published keys do not read: " + e.getMessage());
            return new CampaignChecker.Outcome(counts, violations);
        }
        long bound = Micros.of(CampaignChild.config(store, store.resolve("unused-locks")).build().signedTimeBound());
        List<Finding> findings = new ArrayList<>();
        LogVerifier v = new LogVerifier(new LogVerifier.Options(keys, bound, true), findings::add,
                new LogVerifier.Progress() {
                    @Override
                    public void starting(String l, int buckets) {
                        // No progress shown.
                    }

                    @Override
                    public void bucket() {
                        // No progress shown.
                    }
                });
        v.verifyLog(store, log);
        v.finish();
        counts.put("verify: messages", v.count(LogVerifier.Counter.MESSAGES));
        counts.put("verify: lease stamps", v.count(LogVerifier.Counter.STAMPS));
        counts.put("verify: grants", v.grants());
        counts.put("verify: signature checks", v.signatureChecks());
        counts.put("verify: errors", v.count(LogVerifier.Counter.ERRORS));
        counts.put("verify: warnings", v.count(LogVerifier.Counter.WARNINGS));
        long torn = 0;
        for (Finding f : findings) {
            if (f.kind() == Finding.Kind.TORN_TAIL) {
                torn++;
            } else {
                violations.add("verify: " + f.severity() + " " + f.kind() + " at " + f.location() + ": " + f.message());
            }
        }
        counts.put("verify: torn tails", torn);
        long tornStored = checked.counts().getOrDefault(CampaignChecker.TORN_TAILS, 0L);
        if (torn != tornStored) {
            violations.add("verify: reported " + torn + " torn tails where the checker found " + tornStored);
        }
        return new CampaignChecker.Outcome(counts, violations);
    }
}
