package org.leasehold.etcd;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;

import org.leasehold.lease.HolderId;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseMode;
import org.leasehold.lease.WaiterStatus;
import org.leasehold.time.Micros;

/**
 * A request queued for a name, as one etcd key per name ({@code <prefix>w/<name>\0<id>}), attached to its front's etcd
 * lease. All the keys of one request are written in one transaction, so they share its revision: queues are ordered
 * by age, then by creation revision ({@code EtcdLeaseService.QUEUE_ORDER}), and two requests are in the same order in
 * every queue they share.
 *
 * @param id          the request's id (unique per front and request)
 * @param waitUntil   micros of service time; past it, the request no longer counts as waiting
 * @param age         micros: the transaction's start, or the arrival by the queuing service's clock; older first
 * @param createRevision the key's creation revision, the order among equal ages (0 before it is written)
 */
record WaiterRecord(String id, HolderId holder, LeaseMode mode, LeaseKind kind, long age, long since, long waitUntil,
        List<String> names, long createRevision) {

    byte[] encode() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(128);
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(1);
            out.writeUTF(id);
            out.writeUTF(holder.process());
            out.writeUTF(holder.owner());
            out.writeByte(mode.type().ordinal());
            out.writeInt(mode.permits());
            out.writeByte(kind.ordinal());
            out.writeLong(age);
            out.writeLong(since);
            out.writeLong(waitUntil);
            out.writeInt(names.size());
            for (String n : names) {
                out.writeUTF(n);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    static WaiterRecord decode(byte[] value, long createRevision) {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(value))) {
            in.readByte();
            String id = in.readUTF();
            HolderId holder = new HolderId(in.readUTF(), in.readUTF());
            LeaseMode.Type type = LeaseMode.Type.values()[in.readByte()];
            int permits = in.readInt();
            LeaseMode mode = type == LeaseMode.Type.EXCLUSIVE ? LeaseMode.EXCLUSIVE
                    : type == LeaseMode.Type.SHARED ? LeaseMode.SHARED : LeaseMode.semaphore(permits);
            LeaseKind kind = LeaseKind.values()[in.readByte()];
            long age = in.readLong();
            long since = in.readLong();
            long waitUntil = in.readLong();
            int n = in.readInt();
            List<String> names = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                names.add(in.readUTF());
            }
            return new WaiterRecord(id, holder, mode, kind, age, since, waitUntil, names, createRevision);
        } catch (IOException | RuntimeException e) {
            throw new IllegalStateException("a queued request's etcd value (revision " + createRevision
                    + ") cannot be read: give each program its own key prefix", e);
        }
    }

    WaiterStatus toApi() {
        return new WaiterStatus(holder, mode, kind, names, Micros.toInstant(since), Micros.toInstant(waitUntil));
    }
}
