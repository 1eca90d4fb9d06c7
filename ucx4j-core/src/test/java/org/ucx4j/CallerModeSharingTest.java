package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ucx4j.testing.Loopback;
import org.ucx4j.testsupport.Requirements;

/**
 * A caller-mode worker shared by threads: a thread in a blocking wait drives the worker while it polls,
 * and must neither keep other threads' blocking calls from finishing nor keep the worker from closing.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@Tag("native")
class CallerModeSharingTest {
    private static WorkerOptions caller() {
        return WorkerOptions.builder().progressMode(ProgressMode.CALLER).build();
    }

    @Test
    void otherThreadsBlockingCallsFinishWhileOneThreadWaits() throws Exception {
        Requirements.assumeUcx();
        try (UcxContext ctx = UcxContext.create();
                UcxWorker server = ctx.newWorker();
                UcxWorker client = ctx.newWorker(caller())) {
            Loopback pair = Loopback.connect(server, client);
            UcxEndpoint ep = pair.client();
            UcxEndpoint back = pair.server();

            // A thread waits on the client for a message that comes only at the end.
            byte[] late = new byte[8];
            CountDownLatch waiting = new CountDownLatch(1);
            CompletableFuture<TagInfo> lateReceive = CompletableFuture.supplyAsync(() -> {
                waiting.countDown();
                return client.tagRecv(late, 99, -1L);
            });
            assertTrue(waiting.await(30, TimeUnit.SECONDS));
            // Meanwhile this thread's blocking calls on the same worker: round trips through the server.
            byte[] out = new byte[64];
            byte[] in = new byte[64];
            byte[] echo = new byte[64];
            for (int i = 0; i < 200; i++) {
                Arrays.fill(out, (byte) i);
                UcxFuture<TagInfo> got = server.tagRecvAsync(echo, 1, -1L);
                ep.tagSend(out, 1);
                got.get(30, TimeUnit.SECONDS);
                UcxFuture<TagInfo> reply = client.tagRecvAsync(in, 2, -1L);
                back.tagSend(echo, 2);
                client.await(reply);
                assertEquals((byte) i, in[63], "round trip " + i);
            }
            assertFalse(lateReceive.isDone(), "the waiting thread's receive completed early");
            back.tagSend(new byte[] {1, 2, 3, 4, 5, 6, 7, 8}, 99);
            assertEquals(8, lateReceive.get(30, TimeUnit.SECONDS).length());
        }
    }

    @Test
    void closeFinishesWhileAnotherThreadWaits() throws Exception {
        Requirements.assumeUcx();
        try (UcxContext ctx = UcxContext.create();
                UcxWorker server = ctx.newWorker()) {
            UcxWorker client = ctx.newWorker(caller());
            Loopback.connect(server, client);
            CountDownLatch waiting = new CountDownLatch(1);
            CompletableFuture<TagInfo> never = CompletableFuture.supplyAsync(() -> {
                waiting.countDown();
                return client.tagRecv(new byte[8], 5, -1L);
            });
            assertTrue(waiting.await(30, TimeUnit.SECONDS));
            // Let the waiter post its receive and reach its polling loop, then close from this thread.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (client.pendingOperations() == 0 && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            client.close();
            ExecutionException e = assertThrows(ExecutionException.class, () -> never.get(30, TimeUnit.SECONDS));
            assertInstanceOf(UcxException.class, e.getCause(), "the waiting receive fails with the close");
        }
    }
}
