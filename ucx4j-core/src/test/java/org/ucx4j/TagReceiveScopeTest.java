package org.ucx4j;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ucx4j.testsupport.Requirements;

/**
 * Tag receives are the worker's, as UCX matches them: two peers sending the same tag fill whichever
 * receive comes first, and binding a receive to an endpoint ties its lifetime to it without filtering.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
@Tag("native")
class TagReceiveScopeTest {
    private static final Duration WAIT = Duration.ofSeconds(30);

    @Test
    void twoPeersSendingTheSameTagFillTheReceivesInArrivalOrder() throws Exception {
        Requirements.assumeUcx();
        try (UcxContext ctx = UcxContext.create();
                UcxWorker server = ctx.newWorker();
                UcxWorker a = ctx.newWorker();
                UcxWorker b = ctx.newWorker()) {
            LinkedBlockingQueue<UcxEndpoint> accepted = new LinkedBlockingQueue<>();
            UcxListener listener = server.listen(0, accepted::add);
            UcxEndpoint toA = connect(a, listener, accepted);
            UcxEndpoint fromA = accepted.poll();
            UcxEndpoint toB = connect(b, listener, accepted);
            UcxEndpoint fromB = accepted.poll();

            // A receive bound to A's endpoint takes B's message: matching is per worker, not per peer.
            byte[] first = new byte[6];
            UcxFuture<TagInfo> boundToA = server.tagRecvAsync(first, 5, -1L, fromA);
            toB.tagSend(bytes("from-B"), 5);
            server.await(boundToA, WAIT);
            assertArrayEquals(bytes("from-B"), first, "the receive bound to A got B's message");

            // And the one bound to B gets A's.
            byte[] second = new byte[6];
            UcxFuture<TagInfo> boundToB = server.tagRecvAsync(second, 5, -1L, fromB);
            toA.tagSend(bytes("from-A"), 5);
            server.await(boundToB, WAIT);
            assertArrayEquals(bytes("from-A"), second, "the receive bound to B got A's message");

            // What binding does: closing A's endpoint ends the receive bound to it, not an unbound one.
            UcxFuture<TagInfo> bound = server.tagRecvAsync(new byte[6], 6, -1L, fromA);
            UcxFuture<TagInfo> unbound = server.tagRecvAsync(new byte[6], 6, -1L);
            server.await(fromA.closeAsync(CloseMode.FORCE), WAIT);
            assertInstanceOf(
                    UcxCanceledException.class,
                    assertThrows(CompletionException.class, bound::join).getCause());
            toB.tagSend(bytes("late-B"), 6);
            server.await(unbound, WAIT);
            assertThrows(IllegalArgumentException.class, () -> a.tagRecvAsync(new byte[1], 1, -1L, fromB));
        }
    }

    private static UcxEndpoint connect(UcxWorker client, UcxListener listener, BlockingQueue<UcxEndpoint> accepted)
            throws Exception {
        UcxEndpoint ep = client.connect("127.0.0.1", listener.port());
        await().atMost(WAIT).until(() -> !accepted.isEmpty());
        return ep;
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }
}
