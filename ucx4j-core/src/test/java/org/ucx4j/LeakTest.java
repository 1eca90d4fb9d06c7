package org.ucx4j;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ucx4j.testing.NativeResources;
import org.ucx4j.testsupport.Requirements;

/** 1,000 connect/close cycles leave file descriptors and native memory where they started. */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
@Tag("native")
class LeakTest {
    @Test
    void thousandConnectCloseCyclesLeakNothing() throws Exception {
        Requirements.assumeUcx();
        try (UcxContext ctx = UcxContext.create();
                UcxWorker server = ctx.newWorker();
                UcxWorker client = ctx.newWorker()) {
            AtomicInteger accepted = new AtomicInteger();
            UcxListener listener = server.listen(0, ep -> accepted.incrementAndGet());
            byte[] ping = {1, 2, 3, 4};
            Runnable cycle = () -> {
                UcxEndpoint ep = client.connect("127.0.0.1", listener.port());
                ep.tagSend(ping, 1);
                ep.close();
            };
            for (int i = 0; i < 100; i++) {
                cycle.run();
            }
            settle(server, client);
            int fdsBefore = NativeResources.openFileDescriptors();
            long mallocBefore = NativeResources.mallocInUse();
            long t0 = System.nanoTime();
            for (int i = 0; i < 1000; i++) {
                cycle.run();
            }
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            settle(server, client);
            int fdsAfter = NativeResources.openFileDescriptors();
            long mallocAfter = NativeResources.mallocInUse();
            System.out.printf(
                    "1000 cycles in %d ms; fds %d -> %d; malloc in use %d -> %d bytes%n",
                    ms, fdsBefore, fdsAfter, mallocBefore, mallocAfter);
            assertEquals(1100, accepted.get());
            assertTrue(fdsAfter <= fdsBefore + 2, "file descriptors grew from " + fdsBefore + " to " + fdsAfter);
            // 1 KiB per cycle would be 1 MB: a real leak of an endpoint or request is far more than that.
            assertTrue(
                    mallocAfter - mallocBefore < (1L << 20),
                    "native memory grew by " + (mallocAfter - mallocBefore) + " bytes over 1000 cycles");
            assertEquals(0, client.pendingOperations());
            assertTrue(client.endpoints().isEmpty(), "client endpoints left: " + client.endpoints());
        }
    }

    /**
     * Waits for the server to notice the disconnects and release its side, and for every close on both
     * workers to have completed in UCX (so their sockets are closed).
     */
    private static void settle(UcxWorker server, UcxWorker client) throws Exception {
        await("both sides release their endpoints")
                .atMost(Duration.ofSeconds(20))
                .pollInterval(Duration.ofMillis(20))
                .untilAsserted(() -> {
                    assertTrue(
                            server.endpoints().isEmpty(),
                            "server endpoints not released: "
                                    + server.endpoints().size());
                    assertEquals(0, server.pendingOperations(), "server operations pending");
                    assertEquals(0, client.pendingOperations(), "client operations pending");
                });
        CompletableFuture.runAsync(System::gc).get();
    }
}
