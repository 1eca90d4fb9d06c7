package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ucx4j.testing.Loopback;
import org.ucx4j.testsupport.Requirements;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
@Tag("native")
class LoopbackSmokeTest {
    @Test
    void tagPingPongInOneProcess() throws Exception {
        Requirements.assumeUcx();
        try (UcxContext ctx = UcxContext.create();
                UcxWorker server = ctx.newWorker();
                UcxWorker client = ctx.newWorker()) {
            Loopback pair = Loopback.connect(server, client);
            UcxEndpoint c = pair.client();
            UcxEndpoint s = pair.server();
            byte[] msg = "hello".getBytes();
            var recv = server.tagRecvAsync(new byte[5], 7, -1L);
            c.tagSend(msg, 7);
            TagInfo info = recv.get(10, TimeUnit.SECONDS);
            assertEquals(5, info.length());
            byte[] back = new byte[5];
            var r2 = c.worker().tagRecvAsync(back, 8, -1L, c);
            s.tagSend(msg, 8);
            r2.get(10, TimeUnit.SECONDS);
            assertArrayEquals(msg, back);
            System.out.println(ctx.describe());
        }
    }
}
