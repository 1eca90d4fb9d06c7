package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ucx4j.testsupport.Requirements;

/** Connecting where nobody answers, and listening where the port is taken: clear errors, in time. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
@Tag("native")
class ConnectionErrorsTest {
    private static WorkerOptions withConnectTimeout(Duration d) {
        return WorkerOptions.builder().connectTimeout(d).build();
    }

    @Test
    void connectToPortWithoutListenerFailsWithinTheTimeout() throws Exception {
        Requirements.assumeUcx();
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        try (UcxContext ctx = UcxContext.create();
                UcxWorker worker = ctx.newWorker(withConnectTimeout(Duration.ofSeconds(2)))) {
            long t0 = System.nanoTime();
            UcxException e = assertThrows(UcxException.class, () -> worker.connect("127.0.0.1", port));
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertTrue(e instanceof UcxUnreachableException || e instanceof UcxTimeoutException, e.toString());
            assertTrue(e.getMessage().contains("127.0.0.1:" + port), e.getMessage());
            assertTrue(ms < 2_000 + 1_500, "took " + ms + " ms");
            assertTrue(worker.endpoints().isEmpty(), "the failed endpoint was released");
        }
    }

    /**
     * An address that never answers: a socket whose accept queue is full drops further SYNs, as an
     * unreachable host would. It lives on loopback, so no traffic leaves the machine.
     */
    @Test
    void connectToUnresponsiveAddressTimesOutWithClearError() throws Exception {
        Requirements.assumeUcx();
        List<Socket> fillers = new ArrayList<>();
        try (ServerSocket silent = new ServerSocket()) {
            silent.bind(new InetSocketAddress("127.0.0.1", 0), 1);
            int port = silent.getLocalPort();
            for (int i = 0; i < 4; i++) {
                Socket s = new Socket();
                try {
                    s.connect(new InetSocketAddress("127.0.0.1", port), 200);
                } catch (java.io.IOException full) {
                    // The queue is already full: what we want.
                }
                fillers.add(s);
            }
            try (UcxContext ctx = UcxContext.create();
                    UcxWorker worker = ctx.newWorker(withConnectTimeout(Duration.ofSeconds(1)))) {
                long t0 = System.nanoTime();
                UcxException e = assertThrows(UcxException.class, () -> worker.connect("127.0.0.1", port));
                long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                assertTrue(e instanceof UcxTimeoutException || e instanceof UcxUnreachableException, e.toString());
                assertTrue(e.getMessage().contains("127.0.0.1:" + port), e.getMessage());
                assertTrue(ms >= 500 && ms < 1_000 + 2_000, "took " + ms + " ms");
            }
        } finally {
            for (Socket s : fillers) {
                s.close();
            }
        }
    }

    @Test
    void listenOnPortInUseNamesTheProblem() {
        Requirements.assumeUcx();
        try (UcxContext ctx = UcxContext.create();
                UcxWorker a = ctx.newWorker();
                UcxWorker b = ctx.newWorker();
                UcxListener first = a.listen(0, ep -> {})) {
            UcxException e = assertThrows(UcxException.class, () -> b.listen(first.port(), ep -> {}));
            assertTrue(e.getMessage().contains("address already in use"), e.getMessage());
            assertTrue(e.getMessage().contains(":" + first.port()), e.getMessage());
        }
    }

    @Test
    void unresolvableHostIsRejectedAtOnce() {
        Requirements.assumeUcx();
        try (UcxContext ctx = UcxContext.create();
                UcxWorker worker = ctx.newWorker()) {
            UcxException e =
                    assertThrows(UcxUnreachableException.class, () -> worker.connect("no-such-host.invalid", 1234));
            assertTrue(e.getMessage().contains("no-such-host.invalid"), e.getMessage());
        }
    }

    @Test
    void handlerThatRejectsFailsTheClientAndCanAcceptOthers() throws Exception {
        Requirements.assumeUcx();
        java.util.concurrent.atomic.AtomicInteger seen = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicReference<ConnectionRequest> kept =
                new java.util.concurrent.atomic.AtomicReference<>();
        try (UcxContext ctx = UcxContext.create();
                UcxWorker server = ctx.newWorker();
                UcxWorker client = ctx.newWorker(withConnectTimeout(Duration.ofSeconds(3)))) {
            UcxListener listener = server.listen(new InetSocketAddress("127.0.0.1", 0), request -> {
                kept.set(request);
                if (seen.incrementAndGet() == 1) {
                    request.reject();
                } else {
                    request.accept();
                }
            });
            assertTrue(
                    listener.address().getAddress().isLoopbackAddress(),
                    listener.address().toString());
            UcxException e = assertThrows(UcxException.class, () -> client.connect(listener.address()));
            assertTrue(e instanceof UcxUnreachableException || e instanceof UcxConnectionResetException, e.toString());
            assertTrue(e.getMessage().contains(":" + listener.port()), e.getMessage());
            try (UcxEndpoint ok = client.connect(listener.address())) {
                assertTrue(ok.isOpen());
            }
            assertEquals(2, seen.get());
            assertEquals(1, listener.acceptedCount());
            // A request can only be decided inside the handler.
            IllegalStateException late =
                    assertThrows(IllegalStateException.class, () -> kept.get().reject());
            assertTrue(late.getMessage().contains("decided"), late.getMessage());
        }
    }
}
