package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
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
}
