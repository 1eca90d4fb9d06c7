package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.ucx4j.testing.Loopback;
import org.ucx4j.testsupport.Requirements;

/**
 * A peer that stalls in the middle of a rendezvous must not bring the process down, whatever the
 * receiving side closes and in which order. A receive that matched a rendezvous message is listed by UCX
 * on the sender's endpoint until the data comes ({@code proto_reqs}, with peer error handling); UCX
 * cannot cancel it, only a forced close of that endpoint ends it, and UCX 1.13 (built with assertions)
 * aborts the process when it destroys an endpoint that still lists one ({@code ucp_ep.c:437}), be it at
 * the end of a graceful endpoint close or in {@code ucp_worker_destroy}. (Found by reviews: the JVM died
 * in {@code ucp_worker_destroy} on UCX 1.13.)
 *
 * <p>Each test: the sender's rendezvous request goes out, the receiver's receive matches it and answers,
 * and nobody progresses the sender after that. The cases: the worker's close alone; the endpoint's
 * graceful close first (asynchronous or blocking), then the worker's; the same without peer error
 * handling (no forced close there, but UCX lists no request on the endpoint either: the receive fails and
 * the worker is destroyed all the same; an earlier version left it undestroyed, found by a review).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@Tag("native")
class StalledRendezvousCloseTest {
    private static final int SIZE = 4 << 20;
    private static final long DEADLINE_NANOS = TimeUnit.SECONDS.toNanos(30);

    private static WorkerOptions options(boolean peerErrorHandling) {
        return WorkerOptions.builder()
                .progressMode(ProgressMode.CALLER)
                .peerErrorHandling(peerErrorHandling)
                .closeTimeout(Duration.ofMillis(300))
                .build();
    }

    private static UcxContext context() {
        return UcxContext.builder().option("RNDV_SCHEME", "put_zcopy").build();
    }

    /** Connects the receiver to a listener of the sender, progressing the sender meanwhile. */
    private static Loopback connect(UcxWorker sender, UcxWorker receiver) throws Exception {
        AtomicBoolean pumping = new AtomicBoolean(true);
        Thread pump = Thread.ofPlatform().start(() -> {
            while (pumping.get()) {
                sender.progress();
            }
        });
        try {
            return Loopback.connect(sender, receiver);
        } finally {
            pumping.set(false);
            pump.join();
        }
    }

    /** Posts the receive and progresses the receiver until it has taken and answered the request. */
    private static UcxFuture<TagInfo> receiveMatched(UcxWorker receiver, Arena arena) {
        UcxFuture<TagInfo> received = receiver.tagRecvAsync(arena.allocate(SIZE, 64), 7, -1L);
        long deadline = System.nanoTime() + DEADLINE_NANOS;
        for (int i = 0; i < 2000 && System.nanoTime() < deadline; i++) {
            receiver.progress();
        }
        assertFalse(received.isDone(), "the receive waits for the stalled sender");
        return received;
    }

    private static void assertFailed(UcxFuture<?> f, String what) {
        assertTrue(f.isDone(), what);
        CompletionException e = assertThrows(CompletionException.class, f::join);
        assertInstanceOf(UcxException.class, e.getCause(), "the receive fails: " + e.getCause());
    }

    private static void awaitDone(UcxWorker worker, UcxFuture<?> f) {
        long deadline = System.nanoTime() + DEADLINE_NANOS;
        while (!f.isDone() && System.nanoTime() < deadline) {
            worker.progress();
        }
        assertTrue(f.isDone(), "done within " + DEADLINE_NANOS / 1_000_000_000 + " s");
    }

    @Test
    void closingAWorkerWhoseReceiveMatchedAStalledRendezvousEndsTheReceive() throws Exception {
        Requirements.assumeUcx();
        try (UcxContext ctx = context();
                Arena arena = Arena.ofShared()) {
            UcxWorker sender = ctx.newWorker(options(true));
            UcxWorker receiver = ctx.newWorker(options(true));
            Loopback pair = connect(sender, receiver);
            UcxFuture<Void> sent =
                    pair.server().tagSendAsync(arena.allocate(SIZE, 64).fill((byte) 5), 7);
            UcxFuture<TagInfo> received = receiveMatched(receiver, arena);

            receiver.close();

            assertFailed(received, "the worker's close ended the receive");
            sender.close();
            assertTrue(sent.isDone(), "the sender's close ended its send");
        }
    }

    @ParameterizedTest(name = "blocking close: {0}")
    @ValueSource(booleans = {false, true})
    void closingTheEndpointFirstThenTheWorkerAlsoEndsTheReceive(boolean blocking) throws Exception {
        Requirements.assumeUcx();
        try (UcxContext ctx = context();
                Arena arena = Arena.ofShared()) {
            UcxWorker sender = ctx.newWorker(options(true));
            UcxWorker receiver = ctx.newWorker(options(true));
            Loopback pair = connect(sender, receiver);
            UcxFuture<Void> sent =
                    pair.server().tagSendAsync(arena.allocate(SIZE, 64).fill((byte) 5), 7);
            UcxFuture<TagInfo> received = receiveMatched(receiver, arena);

            // The receiver's endpoint to the stalled sender first, gracefully, then the worker.
            if (blocking) {
                pair.client().close();
            } else {
                UcxFuture<Void> epClosed = pair.client().closeAsync(CloseMode.FLUSH);
                awaitDone(receiver, epClosed);
                epClosed.join(); // flushed, then closed by force: no timeout
            }
            assertFailed(received, "the endpoint's close ended the receive");
            receiver.close();
            sender.close();
            assertTrue(sent.isDone(), "the sender's close ended its send");
        }
    }

    @ParameterizedTest(name = "endpoint closed first: {0}")
    @ValueSource(booleans = {false, true})
    void withoutPeerErrorHandlingTheReceiveFailsAndNothingAborts(boolean endpointFirst) throws Exception {
        Requirements.assumeUcx();
        try (UcxContext ctx = context();
                Arena arena = Arena.ofShared()) {
            UcxWorker sender = ctx.newWorker(options(false));
            UcxWorker receiver = ctx.newWorker(options(false));
            Loopback pair = connect(sender, receiver);
            UcxFuture<Void> sent =
                    pair.server().tagSendAsync(arena.allocate(SIZE, 64).fill((byte) 5), 7);
            UcxFuture<TagInfo> received = receiveMatched(receiver, arena);

            if (endpointFirst) {
                // No forced close without peer error handling: the graceful one waits for the stalled
                // peer, and the caller hears of it after twice the close timeout.
                awaitDone(receiver, pair.client().closeAsync(CloseMode.FLUSH));
            }
            receiver.close(); // UCX still holds the receive, on no endpoint's list: failed, worker destroyed

            assertFailed(received, "the worker's close ended the receive");
            assertEquals(0, ctx.workersLeftUndestroyed(), "without peer error handling nothing needs leaking");
            sender.close();
            assertTrue(sent.isDone(), "the sender's close ended its send");
        }
    }
}
