package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ucx4j.testing.Loopback;
import org.ucx4j.testsupport.Requirements;

/** A receive posted after its message arrived (UCX's unexpected queue) completes at once with the right tag and length. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class UnexpectedMessageTest {
    @Test
    void receivePostedAfterArrivalReportsTagAndLength() throws Exception {
        Requirements.assumeUcx();
        try (UcxContext ctx = UcxContext.create(); UcxWorker server = ctx.newWorker(); UcxWorker client = ctx.newWorker()) {
            UcxEndpoint c = Loopback.connect(server, client).client();
            for (int i = 1; i <= 5; i++) {
                c.tagSend(new byte[i * 10], (42L << 32) | i);
            }
            c.flush();
            Thread.sleep(300);
            for (int i = 1; i <= 5; i++) {
                byte[] in = new byte[100];
                TagInfo info = server.tagRecv(in, 0, 0);
                assertEquals((42L << 32) | i, info.senderTag(), "sender tag of message " + i);
                assertEquals(i * 10, info.length(), "length of message " + i);
            }
        }
    }
}
