package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.ucx4j.testing.Loopback;
import org.ucx4j.testsupport.Requirements;

/** Close semantics: in-flight operations complete as canceled; close twice is harmless; use after close is refused. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
@Tag("native")
class CloseTest {
    private static UcxException failureOf(UcxFuture<?> f) throws Exception {
        try {
            f.get(10, TimeUnit.SECONDS);
            throw new AssertionError("expected failure, got success");
        } catch (ExecutionException e) {
            return assertInstanceOf(UcxException.class, e.getCause());
        }
    }

    @ParameterizedTest
    @EnumSource(CloseMode.class)
    void closingAnEndpointCancelsItsPendingReceives(CloseMode mode) throws Exception {
        Requirements.assumeUcx();
        try (UcxContext ctx = UcxContext.create();
                UcxWorker server = ctx.newWorker();
                UcxWorker client = ctx.newWorker();
                Arena arena = Arena.ofShared()) {
            UcxEndpoint ep = Loopback.connect(server, client).client();
            List<UcxFuture<?>> pending = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                pending.add(ep.worker().tagRecvAsync(arena.allocate(64), 1000 + i, -1L, ep));
            }
            pending.add(ep.streamRecvAsync(arena.allocate(16)));
            client.await(ep.closeAsync(mode), java.time.Duration.ofSeconds(10));
            for (UcxFuture<?> f : pending) {
                UcxException e = failureOf(f);
                assertInstanceOf(UcxCanceledException.class, e, e.toString());
            }
            assertEquals(0, client.pendingOperations());
            assertThrows(IllegalStateException.class, () -> ep.tagSend(new byte[1], 1));
            assertThrows(IllegalStateException.class, () -> ep.streamRecvAsync(new byte[1]));
        }
    }

    @Test
    void closingAWorkerCancelsItsPendingReceives() throws Exception {
        Requirements.assumeUcx();
        UcxFuture<TagInfo> pending;
        try (UcxContext ctx = UcxContext.create();
                Arena arena = Arena.ofShared()) {
            UcxWorker worker = ctx.newWorker();
            pending = worker.tagRecvAsync(arena.allocate(64), 5, -1L);
            worker.close();
            UcxException e = failureOf(pending);
            assertInstanceOf(UcxCanceledException.class, e);
            assertThrows(IllegalStateException.class, () -> worker.tagRecvAsync(new byte[1], 1, -1L));
            assertThrows(IllegalStateException.class, () -> worker.connect("127.0.0.1", 1));
        }
    }

    @Test
    void closeTwiceIsHarmlessAndUseAfterCloseIsRefused() throws Exception {
        Requirements.assumeUcx();
        UcxContext ctx = UcxContext.create();
        UcxWorker server = ctx.newWorker();
        UcxWorker client = ctx.newWorker();
        Loopback pair = Loopback.connect(server, client);
        UcxEndpoint ep = pair.client();
        UcxListener l = pair.listener();
        assertDoesNotThrow(ep::close);
        assertDoesNotThrow(ep::close);
        assertDoesNotThrow(l::close);
        assertDoesNotThrow(l::close);
        assertDoesNotThrow(client::close);
        assertDoesNotThrow(client::close);
        assertDoesNotThrow(ctx::close);
        assertDoesNotThrow(ctx::close);
        assertDoesNotThrow(server::close);
        IllegalStateException e = assertThrows(IllegalStateException.class, ctx::newWorker);
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
        assertThrows(IllegalStateException.class, () -> client.listen(0, x -> {}));
        assertThrows(IllegalStateException.class, () -> ep.tagSendAsync(new byte[1], 1));
    }

    @Test
    void blockingCallInsideACallbackIsRefused() throws Exception {
        Requirements.assumeUcx();
        try (UcxContext ctx = UcxContext.create();
                UcxWorker server = ctx.newWorker();
                UcxWorker client = ctx.newWorker()) {
            UcxEndpoint ep = Loopback.connect(server, client).client();
            AtomicReference<Throwable> seen = new AtomicReference<>();
            UcxFuture<TagInfo> r = server.tagRecvAsync(new byte[4], 9, -1L);
            CompletableFuture<Void> chained = r.thenAccept(info -> {
                try {
                    ep.tagSend(new byte[1], 10);
                } catch (Throwable t) {
                    seen.set(t);
                }
            });
            ep.tagSend(new byte[4], 9);
            chained.get(10, TimeUnit.SECONDS);
            // The receive completed on the server's progress thread; a blocking send there... is on
            // the client worker, whose lock is not held: allowed. A blocking call on the *same* worker is not:
            UcxFuture<TagInfo> r2 = server.tagRecvAsync(new byte[4], 11, -1L);
            CompletableFuture<Void> chained2 = r2.thenAccept(info -> {
                try {
                    server.tagRecv(new byte[4], 12, -1L);
                } catch (Throwable t) {
                    seen.set(t);
                }
            });
            ep.tagSend(new byte[4], 11);
            chained2.get(10, TimeUnit.SECONDS);
            assertInstanceOf(IllegalStateException.class, seen.get());
            assertTrue(seen.get().getMessage().contains("callback"), seen.get().getMessage());
        }
    }

    /**
     * Two caller-driven workers in one thread: closing the client cannot finish its graceful close,
     * because nobody progresses the server. The worker is then destroyed with the close request still
     * outstanding, which UCX 1.13 turned into an abort until ucx4j released such requests first.
     */
    @Test
    void destroyingAWorkerWithAnUnfinishedCloseDoesNotCrash() throws Exception {
        Requirements.assumeUcx();
        WorkerOptions caller = WorkerOptions.builder()
                .progressMode(ProgressMode.CALLER)
                .closeTimeout(java.time.Duration.ofMillis(300))
                .build();
        UcxContext ctx = UcxContext.create();
        UcxWorker server = ctx.newWorker(caller);
        UcxWorker client = ctx.newWorker(caller);
        CompletableFuture<UcxEndpoint> accepted = new CompletableFuture<>();
        UcxListener l = server.listen(0, accepted::complete);
        UcxFuture<UcxEndpoint> connecting =
                client.connectAsync(new java.net.InetSocketAddress("127.0.0.1", l.port()), null);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while ((!connecting.isDone() || !accepted.isDone()) && System.nanoTime() < deadline) {
            client.progress();
            server.progress();
        }
        UcxEndpoint ep = connecting.join();
        ep.tagSendAsync(new byte[64], 1);
        client.close();
        assertDoesNotThrow(ctx::close);
    }
}
