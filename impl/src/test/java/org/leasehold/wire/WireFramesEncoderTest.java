package org.leasehold.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.Arrays;

import org.junit.jupiter.api.Test;
import org.leasehold.wire.proto.EchoRequest;
import org.leasehold.wire.proto.SessionRequest;
import org.leasehold.wire.proto.SessionRequests;

import com.google.protobuf.ByteString;

/** The reusable frame encoder of both ends of the socket transport: the same bytes as a frame of its own. */
class WireFramesEncoderTest {

    private static SessionRequests echoes(int count, int payloadBytes) {
        byte[] payload = new byte[payloadBytes];
        Arrays.fill(payload, (byte) 'x');
        SessionRequests.Builder b = SessionRequests.newBuilder();
        for (int i = 0; i < count; i++) {
            b.addRequests(SessionRequest.newBuilder().setRequestId(i + 1).setEcho(EchoRequest.newBuilder()
                    .setPayload(ByteString.copyFrom(payload))));
        }
        return b.build();
    }

    @Test
    void framesEncodedOneAfterAnotherIntoTheKeptBufferReadBackAsSent() throws IOException {
        WireFrames.Encoder encoder = new WireFrames.Encoder();
        ByteArrayOutputStream stream = new ByteArrayOutputStream();
        SessionRequests[] sent = {echoes(1, 10), echoes(3, 2_000), echoes(1, 0), echoes(40, 1_500), echoes(2, 7)};
        byte[] kept = null;
        for (SessionRequests m : sent) {
            int n = encoder.encode(m);
            assertArrayEquals(WireFrames.encode(m), Arrays.copyOf(encoder.buffer(), n), "the same bytes as encode");
            stream.write(encoder.buffer(), 0, n);
            if (n <= WireFrames.Encoder.KEPT_BYTES) {
                if (kept != null && n <= kept.length) {
                    assertSame(kept, encoder.buffer(), "a frame that fits is encoded into the kept buffer");
                }
                kept = encoder.buffer();
            }
        }
        WireFrames.Reader in = new WireFrames.Reader(new ByteArrayInputStream(stream.toByteArray()), 1 << 20);
        for (SessionRequests m : sent) {
            assertEquals(m, in.next(SessionRequests.parser(), "SessionRequests"));
        }
    }

    @Test
    void aFrameLargerThanTheKeptBufferGetsAnArrayOfItsOwnAndTheNextSmallOneTheKeptBufferAgain() {
        WireFrames.Encoder encoder = new WireFrames.Encoder();
        encoder.encode(echoes(1, 100));
        byte[] kept = encoder.buffer();
        SessionRequests large = echoes(2, WireFrames.Encoder.KEPT_BYTES);
        int n = encoder.encode(large);
        assertTrue(n > WireFrames.Encoder.KEPT_BYTES, "a frame of " + n + " bytes");
        assertNotSame(kept, encoder.buffer(), "the large frame has its own array");
        assertArrayEquals(WireFrames.encode(large), Arrays.copyOf(encoder.buffer(), n));
        SessionRequests small = echoes(1, 50);
        int m = encoder.encode(small);
        assertSame(kept, encoder.buffer(), "the large frame's array was not kept");
        assertArrayEquals(WireFrames.encode(small), Arrays.copyOf(encoder.buffer(), m));
    }
}
