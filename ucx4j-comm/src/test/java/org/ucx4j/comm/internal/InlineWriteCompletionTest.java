package org.ucx4j.comm.internal;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ucx4j.comm.CommClosedException;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.Message;
import org.ucx4j.testsupport.Requirements;

/**
 * Review of 7bed0cf (ucx:// inline writes complete once their header is posted): a blocking writer
 * against a reader that reads nothing is still held back by the credit window; every message written
 * before a graceful close is delivered; and a peer that goes away after writes completed early fails the
 * writer's later writes and its close returns, nothing waits.
 */
@Tag("native")
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class InlineWriteCompletionTest {
    private static final Duration DEADLINE = Duration.ofSeconds(30);

    @BeforeAll
    static void needsUcx() {
        Requirements.assumeUcx();
    }

    private final UcxTransport transport = new UcxTransport();
    private final List<AutoCloseable> toClose = new ArrayList<>();
    private final LinkedBlockingQueue<UcxComm> accepted = new LinkedBlockingQueue<>();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
        transport.close();
    }

    private UcxComm[] pair() throws Exception {
        CommOptions o = UcxFlowControlTest.options();
        UcxTransport.Listener l = (UcxTransport.Listener)
                transport.listen(URI.create("ucx://127.0.0.1:0"), c -> accepted.add((UcxComm) c), o);
        toClose.add(l);
        UcxComm client = (UcxComm) transport.connectAsync(l.address(), o).get(DEADLINE.toSeconds(), TimeUnit.SECONDS);
        toClose.add(client);
        UcxComm server = accepted.poll(DEADLINE.toSeconds(), TimeUnit.SECONDS);
        toClose.add(server);
        return new UcxComm[] {client, server};
    }

    private static Message msg(int i) {
        return Message.ofBytes(("message " + i).getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void aBlockingWriterIsHeldBackByAReaderThatReadsNothing() throws Exception {
        UcxComm[] p = pair();
        int n = 3 * UcxComm.CREDIT_WINDOW;
        AtomicInteger written = new AtomicInteger();
        CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> {
            for (int i = 0; i < n; i++) {
                p[0].write(msg(i));
                written.incrementAndGet();
            }
        });
        await("the window's writes returned").atMost(DEADLINE).until(() -> written.get() >= UcxComm.CREDIT_WINDOW);
        // Held: no write beyond the window returns while the reader reads nothing.
        await().during(Duration.ofMillis(500))
                .atMost(Duration.ofSeconds(5))
                .until(() -> written.get() == UcxComm.CREDIT_WINDOW);
        assertEquals(UcxComm.CREDIT_WINDOW, p[1].headersReceived());
        for (int i = 0; i < n; i++) {
            try (Message m = p[1].read(DEADLINE)) {
                assertEquals("message " + i, new String(m.frame(0).toByteArray(), StandardCharsets.UTF_8));
            }
        }
        writer.get(DEADLINE.toSeconds(), TimeUnit.SECONDS);
    }

    @Test
    void everyInlineMessageWrittenBeforeAGracefulCloseIsDelivered() throws Exception {
        UcxComm[] p = pair();
        int n = 500;
        CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> {
            for (int i = 0; i < n; i++) {
                if (i % 2 == 0) {
                    p[0].write(msg(i));
                } else {
                    p[0].writeAsync(msg(i));
                }
            }
            p[0].close();
        });
        for (int i = 0; i < n; i++) {
            try (Message m = p[1].read(DEADLINE)) {
                assertEquals("message " + i, new String(m.frame(0).toByteArray(), StandardCharsets.UTF_8));
            }
        }
        assertThrows(CommClosedException.class, () -> p[1].read(DEADLINE));
        writer.get(DEADLINE.toSeconds(), TimeUnit.SECONDS);
    }

    @Test
    void aPeerThatAbortsAfterEarlyCompletionsFailsLaterWritesAndNothingWaits() throws Exception {
        UcxComm[] p = pair();
        for (int i = 0; i < 10; i++) {
            p[0].write(msg(i)); // completed once posted
        }
        p[1].abort();
        // Writes go on failing, within the transport's detection time, never hang.
        CompletableFuture<Void> last = CompletableFuture.runAsync(() -> {
            for (int i = 0; ; i++) {
                p[0].write(msg(i));
            }
        });
        ExecutionException e =
                assertThrows(ExecutionException.class, () -> last.get(DEADLINE.toSeconds(), TimeUnit.SECONDS));
        assertInstanceOf(CommClosedException.class, e.getCause(), String.valueOf(e.getCause()));
        long t0 = System.nanoTime();
        p[0].close();
        assertTrue(System.nanoTime() - t0 < DEADLINE.toNanos(), "close returned");
        await("the client let go of its endpoint").atMost(DEADLINE).until(p[0]::finished);
    }
}
