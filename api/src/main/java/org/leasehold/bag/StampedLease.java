package org.leasehold.bag;

import java.util.Arrays;
import java.util.Objects;

/**
 * A lease name as stored with a message: the name, the generation of the grant it was written under, and the grant's
 * witness (opaque bytes, empty until witnesses are signed).
 */
public record StampedLease(String name, long generation, byte[] witness) {

    public StampedLease {
        Objects.requireNonNull(name, "StampedLease.name");
        witness = witness == null ? new byte[0] : witness.clone();
    }

    /** The witness bytes (a copy). */
    @Override
    public byte[] witness() {
        return witness.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof StampedLease s && s.name.equals(name) && s.generation == generation
                && Arrays.equals(s.witness, witness);
    }

    @Override
    public int hashCode() {
        return name.hashCode() * 31 + Long.hashCode(generation);
    }

    @Override
    public String toString() {
        return name + "@" + generation + (witness.length > 0 ? "+witness(" + witness.length + " B)" : "");
    }
}
