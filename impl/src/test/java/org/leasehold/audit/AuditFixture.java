package org.leasehold.audit;

import java.security.SecureRandom;

import org.leasehold.lease.CorrelationId;
import org.leasehold.lease.Ending;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseMode;

/** Witnesses and keys for the audit tests. */
final class AuditFixture {
    static final long T = 1_790_000_000_000_000L;

    private AuditFixture() {
    }

    static SigningKey key(int seed) {
        return SigningKey.generate(new SecureRandom(new byte[] {(byte) seed}) {
            private static final long serialVersionUID = 1L;
            private int n = seed;

            @Override
            public void nextBytes(byte[] bytes) {
                for (int i = 0; i < bytes.length; i++) {
                    bytes[i] = (byte) (n * 31 + i * 7);
                }
                n++;
            }
        });
    }

    static Witness witness(KeyId key, String name, long generation) {
        return new Witness(WitnessEvent.GRANT, "svc-1", key, name, generation, LeaseMode.EXCLUSIVE, LeaseKind.FULL,
                T - 5_000, T, T + 10_000_000, T, T + 3, 500_000, new CorrelationId(0x1234L, generation),
                new CorrelationId(0x1234L, generation - 1), Ending.RELINQUISHED, T - 10, T - 5_000, T - 10,
                new HolderId("host-a/jvm", "tx/42"), "alice");
    }

    static PublishedKey published(SigningKey k) {
        return new PublishedKey(k.publicKey(), "svc-1", T - 1_000_000_000L, Long.MAX_VALUE, Long.MAX_VALUE);
    }
}
