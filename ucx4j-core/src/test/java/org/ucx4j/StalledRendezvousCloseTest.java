package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.time.Duration;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ucx4j.testing.Loopback;
import org.ucx4j.testsupport.Requirements;

/**
 * A peer that stalls in the middle of a rendezvous must not bring the process down when the receiving
 * worker closes. A receive that matched a rendezvous message is listed on the sender's endpoint until the
 * data comes; UCX cannot cancel it, a flush close of that endpoint never ends, and UCX 1.13 aborts the
 * process when it destroys an endpoint that still lists one ({@code ucp_ep.c}: {@code proto_reqs}). The
 * worker's close now waits a close timeout for such receives and then closes its endpoints by force, which
 * ends them as canceled. (Found by a review: the JVM died in {@code ucp_worker_destroy} on UCX 1.13.)
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@Tag("native")
class StalledRendezvousCloseTest {
    @Test
    void closingAWorkerWhoseReceiveMatchedAStalledRendezvousEndsTheReceive() throws Exception {
        Requirements.assumeUcx();
        WorkerOptions caller = WorkerOptions.builder()
                .progressMode(ProgressMode.CALLER)
                .peerErrorHandling(true)
                .closeTimeout(Duration.ofMillis(300))
                .build();
        try (UcxContext ctx =
                        UcxContext.builder().option("RNDV_SCHEME", "put_zcopy").build();
                Arena arena = Arena.ofShared()) {
            UcxWorker sender = ctx.newWorker(caller);
            UcxWorker receiver = ctx.newWorker(caller);
            AtomicBoolean pumping = new AtomicBoolean(true);
            Thread pump = Thread.ofPlatform().start(() -> {
                while (pumping.get()) {
                    sender.progress();
                }
            });
            Loopback pair;
            try {
                pair = Loopback.connect(sender, receiver);
            } finally {
                pumping.set(false);
                pump.join();
            }
            int size = 4 << 20;
            // The sender's rendezvous request goes out; nobody progresses the sender after this.
            UcxFuture<Void> sent =
                    pair.server().tagSendAsync(arena.allocate(size, 64).fill((byte) 5), 7);
            UcxFuture<TagInfo> received = receiver.tagRecvAsync(arena.allocate(size, 64), 7, -1L);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            for (int i = 0; i < 2000 && System.nanoTime() < deadline; i++) {
                receiver.progress(); // takes the request and answers it: the receive has matched
            }
            assertFalse(received.isDone(), "the receive waits for the stalled sender");

            receiver.close();

            assertTrue(received.isDone(), "the worker's close ended the receive");
            CompletionException e = assertThrows(CompletionException.class, received::join);
            assertInstanceOf(UcxException.class, e.getCause(), "the receive fails: " + e.getCause());
            sender.close();
            assertTrue(sent.isDone(), "the sender's close ended its send");
        }
    }
}
