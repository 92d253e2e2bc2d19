package org.leasehold.simulation.nfs;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.NonWritableChannelException;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.util.Arrays;

/**
 * An open file of a simulated NFS client. Written bytes stay in the client (dirty) until {@link #force} or
 * {@link #close} sends them to the server, or the client sends a part early; reads come from the server, beyond what
 * this channel wrote itself; {@link #size} comes from the attributes cached at open while they live.
 */
final class SimChannel extends FileChannel {
    private final SimNfsClient client;
    private final SimNfsServer.Node node;
    private final SimPath path;
    private final boolean writable;
    /** This client's view of the file: what it found at open plus what it wrote; [dirtyFrom, dirtyTo) not sent. */
    private byte[] shadow;
    private int shadowSize;
    private int dirtyFrom = Integer.MAX_VALUE;
    private int dirtyTo;
    private long position;
    private boolean lost;

    SimChannel(SimNfsClient client, SimNfsServer.Node node, SimPath path, boolean writable) {
        this.client = client;
        this.node = node;
        this.path = path;
        this.writable = writable;
        if (writable) {
            shadow = node.bytes();
            shadowSize = shadow.length;
        }
    }

    /** The machine crashed: what was not sent is gone. */
    void lose() {
        lost = true;
        dirtyFrom = Integer.MAX_VALUE;
        dirtyTo = 0;
    }

    private void live() throws IOException {
        client.checkAlive();
        if (lost || !isOpen()) {
            throw new java.nio.channels.ClosedChannelException();
        }
    }

    // ------------------------------------------------------------------------------------------------ writing

    @Override
    public int write(ByteBuffer src) throws IOException {
        int n = write(src, position);
        position += n;
        return n;
    }

    @Override
    public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
        live();
        if (!writable) {
            throw new NonWritableChannelException();
        }
        client.host().step("WRITE", path.toString());
        long total = 0;
        for (int i = offset; i < offset + length; i++) {
            int n = put(srcs[i], position);
            position += n;
            total += n;
        }
        maybeWriteBack();
        return total;
    }

    @Override
    public int write(ByteBuffer src, long at) throws IOException {
        live();
        if (!writable) {
            throw new NonWritableChannelException();
        }
        client.host().step("WRITE", path.toString());
        int n = put(src, at);
        maybeWriteBack();
        return n;
    }

    private int put(ByteBuffer src, long at) {
        int n = src.remaining();
        int end = Math.toIntExact(at + n);
        if (end > shadow.length) {
            shadow = Arrays.copyOf(shadow, Math.max(end, shadow.length * 2 + 64));
        }
        src.get(shadow, (int) at, n);
        shadowSize = Math.max(shadowSize, end);
        if (n > 0) {
            dirtyFrom = Math.min(dirtyFrom, (int) at);
            dirtyTo = Math.max(dirtyTo, end);
        }
        return n;
    }

    /** The client's background write-back: sometimes sends a prefix of the dirty bytes at once. */
    private void maybeWriteBack() {
        if (dirtyTo > dirtyFrom && client.host().random().nextDouble() < client.model().writebackChance()) {
            int k = client.host().random().nextInt(dirtyTo - dirtyFrom + 1);
            send(k);
        }
    }

    private void send(int k) {
        if (k <= 0 || dirtyTo <= dirtyFrom) {
            return;
        }
        client.server().write(node, shadow, dirtyFrom, k, dirtyFrom);
        dirtyFrom += k;
        if (dirtyFrom >= dirtyTo) {
            dirtyFrom = Integer.MAX_VALUE;
            dirtyTo = 0;
        }
    }

    private void flush() {
        if (dirtyTo > dirtyFrom) {
            send(dirtyTo - dirtyFrom);
        }
    }

    @Override
    public void force(boolean metaData) throws IOException {
        live();
        client.host().step("COMMIT", path.toString());
        flush();
    }

    @Override
    protected void implCloseChannel() throws IOException {
        client.closed(this);
        if (lost) {
            return;
        }
        client.checkAlive();
        if (writable && dirtyTo > dirtyFrom) {
            // Close-to-open: close sends every dirty byte to the server.
            client.host().step("CLOSE", path.toString());
            flush();
        }
    }

    // ------------------------------------------------------------------------------------------------ reading

    @Override
    public int read(ByteBuffer dst) throws IOException {
        int n = read(dst, position);
        if (n > 0) {
            position += n;
        }
        return n;
    }

    @Override
    public long read(ByteBuffer[] dsts, int offset, int length) throws IOException {
        long total = 0;
        for (int i = offset; i < offset + length; i++) {
            int n = read(dsts[i]);
            if (n < 0) {
                return total == 0 ? -1 : total;
            }
            total += n;
        }
        return total;
    }

    @Override
    public int read(ByteBuffer dst, long at) throws IOException {
        live();
        client.host().step("READ", path.toString());
        byte[] src;
        int size;
        if (writable) {
            src = shadow;
            size = shadowSize;
        } else {
            src = node.data;
            size = node.size;
        }
        if (at >= size) {
            return -1;
        }
        int n = (int) Math.min(dst.remaining(), size - at);
        dst.put(src, (int) at, n);
        return n;
    }

    @Override
    public long position() {
        return position;
    }

    @Override
    public FileChannel position(long newPosition) {
        position = newPosition;
        return this;
    }

    @Override
    public long size() throws IOException {
        live();
        if (writable) {
            return shadowSize;
        }
        return client.cachedSize(node);
    }

    // ------------------------------------------------------------------------------------------------ refused

    @Override
    public FileChannel truncate(long size) throws IOException {
        client.host().refused("TRUNCATE " + path);
        throw new IOException("truncate is not NFS-safe: " + path);
    }

    @Override
    public long transferTo(long position, long count, WritableByteChannel target) {
        throw new UnsupportedOperationException("transferTo on the simulated NFS");
    }

    @Override
    public long transferFrom(ReadableByteChannel src, long position, long count) {
        throw new UnsupportedOperationException("transferFrom on the simulated NFS");
    }

    @Override
    public MappedByteBuffer map(MapMode mode, long position, long size) {
        throw new UnsupportedOperationException("map on the simulated NFS");
    }

    @Override
    public FileLock lock(long position, long size, boolean shared) throws IOException {
        client.host().refused("LOCK " + path);
        throw new IOException("file locks are not NFS-safe: " + path);
    }

    @Override
    public FileLock tryLock(long position, long size, boolean shared) throws IOException {
        return lock(position, size, shared);
    }
}
