package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.ucx4j.testing.Loopback;
import org.ucx4j.testsupport.Requirements;

/**
 * Many worker flushes in flight at once. UCX 1.13 counts a worker's flushes in flight in 8 bits and
 * aborts the process past 254 of them; ucx4j keeps one in UCX and lets the rest share the next. A worker
 * in caller mode makes no progress until asked, so every flush asked for stays in flight until then.
 */
@Tag("native")
class WorkerFlushCoalescingTest {
    private static final long TAG = 0xf105L;
    private static final int FLUSHES = 4_000;
    private static final int THREADS = 8;

    private static UcxWorker callerWorker(UcxContext ctx) {
        return ctx.newWorker(
                WorkerOptions.builder().progressMode(ProgressMode.CALLER).build());
    }

    @Test
    void thousandsOfFlushesInFlightAtOnceAllComplete() throws Exception {
        Requirements.assumeUcx();
        try (UcxContext ctx = UcxContext.create();
                UcxWorker server = ctx.newWorker();
                UcxWorker client = callerWorker(ctx);
                Arena arena = Arena.ofShared()) {
            Loopback pair = Loopback.connect(server, client);
            MemorySegment out = arena.allocate(64 * 1024);
            out.fill((byte) 7);
            MemorySegment in = arena.allocate(64 * 1024);
            UcxFuture<TagInfo> received = server.tagRecvAsync(in, TAG, -1L);
            UcxFuture<Void> send = pair.client().tagSendAsync(out, TAG);
            ConcurrentLinkedQueue<UcxFuture<Void>> flushes = new ConcurrentLinkedQueue<>();
            CountDownLatch go = new CountDownLatch(1);
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                threads.add(Thread.ofPlatform().start(() -> {
                    try {
                        go.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return;
                    }
                    for (int i = 0; i < FLUSHES / THREADS; i++) {
                        flushes.add(client.flushAsync());
                    }
                }));
            }
            go.countDown();
            for (Thread t : threads) {
                assertTrue(t.join(Duration.ofSeconds(60)), "the flushing threads end");
            }
            assertEquals(FLUSHES, flushes.size());
            CompletableFuture<Void> all = CompletableFuture.allOf(flushes.toArray(CompletableFuture<?>[]::new));
            client.await(all, Duration.ofSeconds(60));
            client.await(send, Duration.ofSeconds(30));
            server.await(received, Duration.ofSeconds(30));
            assertEquals(-1L, in.mismatch(out), "the data arrived");
            client.flush(); // and the worker still flushes afterwards
        }
    }

    @Test
    void flushesWaitingWhenTheWorkerClosesAllEnd() throws Exception {
        Requirements.assumeUcx();
        List<UcxFuture<Void>> flushes = new ArrayList<>();
        try (UcxContext ctx = UcxContext.create();
                UcxWorker server = ctx.newWorker();
                Arena arena = Arena.ofShared()) {
            try (UcxWorker client = callerWorker(ctx)) {
                Loopback pair = Loopback.connect(server, client);
                pair.client().tagSendAsync(arena.allocate(1 << 20), TAG);
                for (int i = 0; i < 300; i++) {
                    flushes.add(client.flushAsync());
                }
            }
            for (UcxFuture<Void> f : flushes) {
                assertTrue(f.isDone(), "a flush still waiting when its worker closed has ended");
                if (f.isCompletedExceptionally()) {
                    CompletionException e = assertThrows(CompletionException.class, f::join);
                    assertTrue(e.getCause() instanceof UcxException, "fails with UCX's reason: " + e.getCause());
                }
            }
        }
    }
}
