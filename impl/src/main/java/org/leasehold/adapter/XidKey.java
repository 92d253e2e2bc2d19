package org.leasehold.adapter;

import java.util.Arrays;
import java.util.HexFormat;

import javax.transaction.xa.Xid;

/** A transaction branch id as a value: usable as a map key, storable, and an {@link Xid} again. */
record XidKey(int formatId, byte[] gtrid, byte[] bqual) implements Xid {

    static XidKey of(Xid xid) {
        if (xid instanceof XidKey k) {
            return k;
        }
        return new XidKey(xid.getFormatId(), xid.getGlobalTransactionId().clone(), xid.getBranchQualifier().clone());
    }

    @Override
    public int getFormatId() {
        return formatId;
    }

    @Override
    public byte[] getGlobalTransactionId() {
        return gtrid.clone();
    }

    @Override
    public byte[] getBranchQualifier() {
        return bqual.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof XidKey k && k.formatId == formatId && Arrays.equals(k.gtrid, gtrid)
                && Arrays.equals(k.bqual, bqual);
    }

    @Override
    public int hashCode() {
        return 31 * (31 * formatId + Arrays.hashCode(gtrid)) + Arrays.hashCode(bqual);
    }

    @Override
    public String toString() {
        HexFormat hex = HexFormat.of();
        return formatId + ":" + hex.formatHex(gtrid) + ":" + hex.formatHex(bqual);
    }
}
