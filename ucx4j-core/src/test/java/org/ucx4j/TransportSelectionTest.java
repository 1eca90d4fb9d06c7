package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ucx4j.testing.Loopback;
import org.ucx4j.testsupport.Requirements;

/** Endpoints work with peer error handling off too (UCX may then pick shared memory). */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
@Tag("native")
class TransportSelectionTest {
    @Test
    void endpointsWithoutPeerErrorHandlingCarryMessages() throws Exception {
        Requirements.assumeUcx();
        WorkerOptions noPeerErrors =
                WorkerOptions.builder().peerErrorHandling(false).build();
        try (UcxContext ctx = UcxContext.create();
                UcxWorker server = ctx.newWorker(noPeerErrors);
                UcxWorker client = ctx.newWorker(noPeerErrors)) {
            UcxEndpoint ep = Loopback.connect(server, client).client();
            byte[] in = new byte[1 << 20];
            UcxFuture<TagInfo> r = server.tagRecvAsync(in, 4, -1L);
            byte[] out = new byte[1 << 20];
            java.util.Arrays.fill(out, (byte) 3);
            ep.tagSend(out, 4);
            assertEquals(1 << 20, server.await(r, Duration.ofSeconds(20)).length());
            assertEquals(3, in[12345]);
            ep.close();
        }
    }

    @Test
    void anEndpointSaysWhichTransportsCarryEachSize() throws Exception {
        Requirements.assumeUcx();
        for (boolean peerErrors : new boolean[] {false, true}) {
            WorkerOptions options =
                    WorkerOptions.builder().peerErrorHandling(peerErrors).build();
            try (UcxContext ctx = UcxContext.create();
                    UcxWorker server = ctx.newWorker(options);
                    UcxWorker client = ctx.newWorker(options)) {
                UcxEndpoint ep = Loopback.connect(server, client).client();
                byte[] in = new byte[8];
                UcxFuture<TagInfo> r = server.tagRecvAsync(in, 5, -1L);
                ep.tagSend(new byte[8], 5); // wired up
                server.await(r, Duration.ofSeconds(20));
                String text = ep.describe();
                assertTrue(text.contains("lane[0]"), text);
                for (long size : new long[] {8, 1 << 20}) {
                    List<String> carried = ep.tagTransports(size);
                    String what = size + " bytes, peer error handling " + peerErrors + ": " + carried + "\n" + text;
                    assertFalse(carried.isEmpty(), what);
                    assertTrue(ctx.transports().containsAll(carried), what + "\ncontext: " + ctx.transports());
                }
                ep.close();
                assertThrows(IllegalStateException.class, ep::describe);
            }
        }
    }
}
