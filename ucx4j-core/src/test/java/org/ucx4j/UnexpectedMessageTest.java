package org.ucx4j;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ucx4j.testing.Loopback;
import org.ucx4j.testsupport.Requirements;

/** A receive posted after its message arrived (UCX's unexpected queue) completes at once with the right tag and length. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
@Tag("native")
class UnexpectedMessageTest {
    @Test
    void receivePostedAfterArrivalReportsTagAndLength() throws Exception {
        Requirements.assumeUcx();
        try (UcxContext ctx = UcxContext.create();
                UcxWorker server = ctx.newWorker();
                UcxWorker client = ctx.newWorker()) {
            UcxEndpoint c = Loopback.connect(server, client).client();
            for (int i = 1; i <= 5; i++) {
                c.tagSend(new byte[i * 10], (42L << 32) | i);
            }
            c.flush();
            // All five wait in UCX's unexpected queue before any receive is posted.
            await("all five messages unexpected at the server")
                    .atMost(Duration.ofSeconds(20))
                    .pollInterval(Duration.ofMillis(10))
                    .until(() -> IntStream.rangeClosed(1, 5)
                            .allMatch(i -> server.tagProbe((42L << 32) | i, -1L).isPresent()));
            for (int i = 1; i <= 5; i++) {
                byte[] in = new byte[100];
                TagInfo info = server.tagRecv(in, 0, 0);
                assertEquals((42L << 32) | i, info.senderTag(), "sender tag of message " + i);
                assertEquals(i * 10, info.length(), "length of message " + i);
            }
        }
    }
}
