package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class LoopbackSmokeTest {
    @Test
    void tagPingPongInOneProcess() throws Exception {
        NativeRequirement.assumeUcx();
        try (UcxContext ctx = UcxContext.create();
             UcxWorker server = ctx.newWorker();
             UcxWorker client = ctx.newWorker()) {
            CompletableFuture<UcxEndpoint> accepted = new CompletableFuture<>();
            UcxListener l = server.listen(0, accepted::complete);
            System.out.println("listening on " + l.address());
            UcxEndpoint c = client.connect("127.0.0.1", l.port());
            UcxEndpoint s = accepted.get(10, TimeUnit.SECONDS);
            byte[] msg = "hello".getBytes();
            var recv = server.tagRecvAsync(new byte[5], 7, -1L);
            c.tagSend(msg, 7);
            TagInfo info = recv.get(10, TimeUnit.SECONDS);
            assertEquals(5, info.length());
            byte[] back = new byte[5];
            var r2 = c.tagRecvAsync(back, 8, -1L);
            s.tagSend(msg, 8);
            r2.get(10, TimeUnit.SECONDS);
            assertArrayEquals(msg, back);
            System.out.println(ctx.describe());
        }
    }
}
