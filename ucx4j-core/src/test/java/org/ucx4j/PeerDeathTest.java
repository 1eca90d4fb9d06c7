package org.ucx4j;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ucx4j.testing.EchoProtocol;
import org.ucx4j.testing.PeerMain;
import org.ucx4j.testsupport.Requirements;
import org.ucx4j.testsupport.RunningJvm;

/** A peer killed with {@code kill -9} mid-transfer: everything pending fails in bounded time, nothing hangs. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@Tag("native")
class PeerDeathTest {
    /** Generous: keep-alive is 1 s here, so detection normally takes a few seconds. */
    private static final Duration BOUND = Duration.ofSeconds(30);

    @Test
    void killedPeerFailsEveryPendingOperationAndTheWorkerStaysUsable() throws Exception {
        Requirements.assumeUcx();
        try (RunningJvm peer = PeerMain.start(Map.of("UCX_KEEPALIVE_INTERVAL", "1s"), "sink-server");
                UcxContext ctx =
                        UcxContext.builder().option("KEEPALIVE_INTERVAL", "1s").build();
                UcxWorker worker = ctx.newWorker();
                Arena arena = Arena.ofShared()) {
            int port = Integer.parseInt(peer.awaitLine("PORT", Duration.ofSeconds(30)));
            CompletableFuture<UcxException> handlerSaw = new CompletableFuture<>();
            UcxEndpoint ep = worker.await(worker.connectAsync(
                    new java.net.InetSocketAddress("127.0.0.1", port),
                    (endpoint, error) -> handlerSaw.complete(error)));
            EchoProtocol.hello(ep, 42);
            peer.awaitLine("READY", Duration.ofSeconds(30));

            List<UcxFuture<?>> pending = new ArrayList<>();
            pending.add(ep.worker().tagRecvAsync(arena.allocate(1024), 0x1234, -1L, ep));
            pending.add(ep.streamRecvAsync(arena.allocate(8)));
            MemorySegment big = arena.allocate(64L << 20, 64);
            // A rendezvous send the sink never receives: in flight until the peer dies.
            pending.add(ep.tagSendAsync(big, EchoProtocol.tag(42, 1)));
            pending.add(ep.tagSendAsync(big.asSlice(0, 8 << 20), EchoProtocol.tag(42, 2)));
            // Not a wait for something: a window in which a wrongly completed receive would show.
            await("receives stay pending while the peer lives")
                    .during(Duration.ofMillis(200))
                    .atMost(Duration.ofSeconds(5))
                    .until(() -> pending.subList(0, 2).stream().noneMatch(UcxFuture::isDone));
            for (UcxFuture<?> f : pending.subList(0, 2)) {
                assertFalse(f.isDone(), "receives must be pending before the kill");
            }

            long t0 = System.nanoTime();
            peer.kill9();
            for (UcxFuture<?> f : pending) {
                try {
                    f.get(BOUND.toSeconds(), TimeUnit.SECONDS);
                    // A send may have completed locally before the kill; receives cannot have.
                    assertTrue(pending.indexOf(f) >= 2, "a receive completed although the peer never sent");
                } catch (ExecutionException e) {
                    assertInstanceOf(UcxException.class, e.getCause());
                    UcxException ue = (UcxException) e.getCause();
                    assertTrue(
                            ue instanceof UcxConnectionResetException || ue instanceof UcxTimeoutException,
                            "expected a peer failure, got " + ue);
                } catch (java.util.concurrent.TimeoutException e) {
                    fail("operation " + pending.indexOf(f) + " still pending " + BOUND + " after the peer was killed");
                }
            }
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            System.out.println("all pending operations failed " + ms + " ms after kill -9");
            UcxException seen = handlerSaw.get(BOUND.toSeconds(), TimeUnit.SECONDS);
            assertTrue(seen.getMessage().contains("127.0.0.1:" + port), seen.getMessage());
            assertFalse(ep.isOpen());
            assertTrue(ep.failure().isPresent());
            // New operations on the dead endpoint fail at once with the peer failure, not a hang and not
            // a misleading "closed by you".
            UcxException late =
                    org.junit.jupiter.api.Assertions.assertThrows(UcxException.class, () -> ep.tagSend(new byte[1], 1));
            assertTrue(
                    late instanceof UcxConnectionResetException || late instanceof UcxTimeoutException,
                    late.toString());
            assertTrue(late.getMessage().contains("failed earlier"), late.getMessage());

            // The worker is still usable: a fresh listener and connection on it work.
            CompletableFuture<UcxEndpoint> accepted = new CompletableFuture<>();
            try (UcxListener listener = worker.listen(0, accepted::complete);
                    UcxEndpoint again = worker.connect("127.0.0.1", listener.port())) {
                UcxEndpoint server = accepted.get(10, TimeUnit.SECONDS);
                byte[] in = new byte[3];
                UcxFuture<TagInfo> r = worker.tagRecvAsync(in, 77, -1L);
                again.tagSend(new byte[] {1, 2, 3}, 77);
                assertEquals(3, worker.await(r).length());
                assertEquals(2, in[1]);
                server.close();
            }
        }
    }
}
