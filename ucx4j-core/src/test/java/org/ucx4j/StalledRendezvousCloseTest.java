package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.ucx4j.StalledPeerFixture.DEADLINE_NANOS;
import static org.ucx4j.StalledPeerFixture.SIZE;
import static org.ucx4j.StalledPeerFixture.awaitDone;
import static org.ucx4j.StalledPeerFixture.keepProgressing;
import static org.ucx4j.StalledPeerFixture.options;

import java.lang.foreign.Arena;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
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

    private static UcxContext context() {
        return UcxContext.builder().option("RNDV_SCHEME", "put_zcopy").build();
    }

    /**
     * A sender stalled in its rendezvous: its request went out, the receiver's receive matched it and
     * answered, and nobody progresses the sender after that.
     */
    private record StalledSend(
            UcxWorker sender, UcxWorker receiver, Loopback pair, UcxFuture<Void> sent, UcxFuture<TagInfo> received) {

        static StalledSend start(UcxContext ctx, Arena arena, boolean peerErrorHandling) throws Exception {
            UcxWorker sender = ctx.newWorker(options(peerErrorHandling));
            UcxWorker receiver = ctx.newWorker(options(peerErrorHandling));
            Loopback pair = connect(sender, receiver);
            UcxFuture<Void> sent =
                    pair.server().tagSendAsync(arena.allocate(SIZE, 64).fill((byte) 5), 7);
            return new StalledSend(sender, receiver, pair, sent, receiveMatched(receiver, arena));
        }

        /** Closes the sender, which must end its send. */
        void closeSender() {
            sender.close();
            assertTrue(sent.isDone(), "the sender's close ended its send");
        }
    }

    /** Connects the receiver to a listener of the sender, progressing the sender meanwhile. */
    private static Loopback connect(UcxWorker sender, UcxWorker receiver) throws Exception {
        try (var _ = keepProgressing(sender)) {
            return Loopback.connect(sender, receiver);
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

    @Test
    void closingAWorkerWhoseReceiveMatchedAStalledRendezvousEndsTheReceive() throws Exception {
        Requirements.assumeUcx();
        try (UcxContext ctx = context();
                Arena arena = Arena.ofShared()) {
            StalledSend s = StalledSend.start(ctx, arena, true);

            s.receiver().close();

            assertFailed(s.received(), "the worker's close ended the receive");
            s.closeSender();
        }
    }

    @ParameterizedTest(name = "blocking close: {0}")
    @ValueSource(booleans = {false, true})
    void closingTheEndpointFirstThenTheWorkerAlsoEndsTheReceive(boolean blocking) throws Exception {
        Requirements.assumeUcx();
        try (UcxContext ctx = context();
                Arena arena = Arena.ofShared()) {
            StalledSend s = StalledSend.start(ctx, arena, true);

            // The receiver's endpoint to the stalled sender first, gracefully, then the worker.
            if (blocking) {
                s.pair().client().close();
            } else {
                UcxFuture<Void> epClosed = s.pair().client().closeAsync(CloseMode.FLUSH);
                awaitDone(s.receiver(), epClosed, "the endpoint's close was done");
                epClosed.join(); // flushed, then closed by force: no timeout
            }
            assertFailed(s.received(), "the endpoint's close ended the receive");
            s.receiver().close();
            s.closeSender();
        }
    }

    @ParameterizedTest(name = "endpoint closed first: {0}")
    @ValueSource(booleans = {false, true})
    void withoutPeerErrorHandlingTheReceiveFailsAndNothingAborts(boolean endpointFirst) throws Exception {
        Requirements.assumeUcx();
        try (UcxContext ctx = context();
                Arena arena = Arena.ofShared()) {
            StalledSend s = StalledSend.start(ctx, arena, false);

            if (endpointFirst) {
                // No forced close without peer error handling: the graceful one waits for the stalled
                // peer, and the caller hears of it after twice the close timeout.
                awaitDone(s.receiver(), s.pair().client().closeAsync(CloseMode.FLUSH), "the endpoint's close was done");
            }
            s.receiver().close(); // UCX still holds the receive, on no endpoint's list: failed, worker destroyed

            assertFailed(s.received(), "the worker's close ended the receive");
            assertEquals(0, ctx.workersLeftUndestroyed(), "without peer error handling nothing needs leaking");
            s.closeSender();
        }
    }
}
