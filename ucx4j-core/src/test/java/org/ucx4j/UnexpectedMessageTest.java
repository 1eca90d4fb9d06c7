package org.ucx4j;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
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
                byte[] out = new byte[i * 10];
                Arrays.fill(out, (byte) i);
                c.tagSend(out, (42L << 32) | i);
            }
            c.flush();
            // All five wait in UCX's unexpected queue before any receive is posted.
            await("all five messages unexpected at the server")
                    .atMost(Duration.ofSeconds(20))
                    .pollInterval(Duration.ofMillis(10))
                    .until(() -> IntStream.rangeClosed(1, 5)
                            .allMatch(i -> server.tagProbe((42L << 32) | i, -1L).isPresent()));
            // Into heap memory (a staging copy), native memory and a scatter list: from UCX 1.16 on these
            // complete inside the call without a callback, from recv_info (UcxWorker.TagReceives).
            try (Arena arena = Arena.ofConfined()) {
                for (int i = 1; i <= 5; i++) {
                    byte[] heap = new byte[100];
                    MemorySegment nat = arena.allocate(100);
                    TagInfo info;
                    byte last;
                    if (i % 3 == 1) {
                        info = server.tagRecv(heap, 0, 0);
                        last = heap[i * 10 - 1];
                    } else if (i % 3 == 2) {
                        info = server.tagRecv(nat, 0, 0);
                        last = nat.get(JAVA_BYTE, i * 10 - 1);
                    } else {
                        info = server.await(server.tagRecvAsync(List.of(nat.asSlice(0, 7), nat.asSlice(7)), 0, 0));
                        last = nat.get(JAVA_BYTE, i * 10 - 1);
                    }
                    assertEquals((42L << 32) | i, info.senderTag(), "sender tag of message " + i);
                    assertEquals(i * 10, info.length(), "length of message " + i);
                    assertEquals((byte) i, last, "last byte of message " + i);
                }
            }
        }
    }
}
