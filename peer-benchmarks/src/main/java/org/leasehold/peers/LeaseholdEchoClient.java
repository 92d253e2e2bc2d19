package org.leasehold.peers;

import java.util.concurrent.TimeUnit;

import com.google.protobuf.ByteString;

import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.MetadataUtils;

import org.leasehold.remote.Protocol;
import org.leasehold.remote.proto.EchoRequest;
import org.leasehold.remote.proto.LeaseholdGrpc;

/**
 * The transport's ceiling: Leasehold's {@code Echo} RPC as "acquire" and again as "release", over the same stack as
 * the lease client (grpc-netty-shaded, one HTTP/2 connection, calls completed on the transport thread). It takes no
 * lock; it is the most any lock call on this stack could do.
 */
final class LeaseholdEchoClient implements LockClient<String> {
    private final ManagedChannel channel;
    private final LeaseholdGrpc.LeaseholdBlockingStub stub;

    LeaseholdEchoClient(String address) {
        int colon = address.lastIndexOf(':');
        if (colon <= 0) {
            throw new IllegalArgumentException("--leasehold '" + address + "' is not host:port");
        }
        this.channel = NettyChannelBuilder.forAddress(address.substring(0, colon), Integer.parseInt(address.substring(colon + 1)))
                .usePlaintext()
                .directExecutor()
                .build();
        Metadata headers = new Metadata();
        headers.put(Protocol.VERSION_HEADER, Integer.toString(Protocol.VERSION));
        this.stub = LeaseholdGrpc.newBlockingStub(channel).withInterceptors(MetadataUtils.newAttachHeadersInterceptor(headers));
    }

    @Override
    public String system() {
        return "leasehold-echo";
    }

    @Override
    public String acquire(String name) {
        echo(name);
        return name;
    }

    @Override
    public void release(String name) {
        echo(name);
    }

    private void echo(String name) {
        stub.withDeadlineAfter(MAX_WAIT.toMillis(), TimeUnit.MILLISECONDS)
                .echo(EchoRequest.newBuilder().setPayload(ByteString.copyFromUtf8(name)).build());
    }

    @Override
    public void close() throws InterruptedException {
        channel.shutdown().awaitTermination(5, TimeUnit.SECONDS);
    }
}
