package org.ucx4j.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.ucx4j.UcxConfig;
import org.ucx4j.testsupport.Requirements;

/**
 * Reads and writes whose futures their callers give up on (cancel, time out), and streams that mix every
 * message shape (no frames, an empty frame, inline, just under and over the inline limit, frames sent
 * apart), on every transport: nothing is lost, reordered or left waiting, and a comm's close is not held
 * by a write its writer stopped waiting for. (Written by a review of the comm's per-message fast paths;
 * the cancelled-reader case failed before on all three transports, the cancelled write held a {@code
 * ucx://} close for its whole close timeout.)
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ReadWriteCancellationTest {
    private static final int[] SIZES = {-1, 0, 100, 8100, 8200, 20_000};
    private final List<AutoCloseable> toClose = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
    }

    private record Pair(Comm client, Comm server) {}

    private Pair pair(String address, Duration closeTimeout) throws Exception {
        if (address.startsWith("ucx")) {
            Requirements.assumeUcx();
        }
        CommOptions o = CommOptions.builder()
                .config(UcxConfig.builder().build())
                .connectTimeout(Duration.ofSeconds(10))
                .closeTimeout(closeTimeout)
                .build();
        CompletableFuture<Comm> accepted = new CompletableFuture<>();
        CommListener l = Comms.listen(URI.create(address), accepted::complete, o);
        toClose.add(l);
        Comm c = Comms.connect(l.address(), o);
        toClose.add(c);
        Comm s = accepted.get(10, TimeUnit.SECONDS);
        toClose.add(s);
        return new Pair(c, s);
    }

    /** Message {@code i}: its shape is {@code SIZES[i % 6]} (-1: no frame), numbered where it has room. */
    private static Message message(int i) {
        int size = SIZES[i % SIZES.length];
        if (size < 0) {
            return Message.of(List.of());
        }
        byte[] b = new byte[size];
        if (size >= 4) {
            ByteBuffer.wrap(b).putInt(i);
        }
        return Message.ofBytes(b);
    }

    private static void check(int i, Message m) {
        int size = SIZES[i % SIZES.length];
        if (size < 0) {
            assertEquals(0, m.frameCount(), "message " + i);
            return;
        }
        assertEquals(1, m.frameCount(), "message " + i);
        assertEquals(size, m.frame(0).size(), "message " + i);
        if (size >= 4) {
            assertEquals(i, ByteBuffer.wrap(m.frame(0).toByteArray()).getInt(), "message " + i + " out of order");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"ucx://127.0.0.1:0", "tcp://127.0.0.1:0", "inproc://0"})
    void aMixedStreamReadWithTinyTimeoutsArrivesWholeAndInOrder(String address) throws Exception {
        Pair p = pair(address, Duration.ofSeconds(5));
        int n = 3000;
        CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> {
            List<CompletableFuture<Void>> pending = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                if (i % 3 == 0) {
                    p.client().write(message(i));
                } else {
                    pending.add(p.client().writeAsync(message(i)));
                }
            }
            pending.forEach(CompletableFuture::join);
            p.client().close();
        });
        SplittableRandom r = new SplittableRandom(7);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
        for (int i = 0; i < n; ) {
            assertTrue(System.nanoTime() < deadline, "stuck at message " + i);
            try (Message m = p.server().read(Duration.ofNanos(r.nextLong(0, 300_000)))) {
                check(i, m);
                i++;
            } catch (CommTimeoutException e) {
                // withdrawn while messages arrive: the next read gets the same message
            }
        }
        assertThrows(CommClosedException.class, () -> p.server().read(Duration.ofSeconds(20)));
        writer.get(20, TimeUnit.SECONDS);
    }

    @ParameterizedTest
    @ValueSource(strings = {"ucx://127.0.0.1:0", "tcp://127.0.0.1:0", "inproc://0"})
    void cancelledReadersNeitherHoldBackNorReorderTheMessages(String address) throws Exception {
        Pair p = pair(address, Duration.ofSeconds(5));
        CompletableFuture<Message> first = p.server().readAsync();
        CompletableFuture<Message> second = p.server().readAsync();
        assertTrue(first.cancel(false));
        assertTrue(second.cancel(false));
        CompletableFuture<Message> third = p.server().readAsync();
        p.client().write(message(2));
        try (Message m = third.get(10, TimeUnit.SECONDS)) {
            check(2, m);
        }
        // Cancelled again, with messages coming faster than the reads: each read gets the next in order.
        CompletableFuture<Message> fourth = p.server().readAsync();
        CompletableFuture<Message> fifth = p.server().readAsync();
        assertTrue(fourth.cancel(false));
        assertTrue(fifth.cancel(false));
        for (int i = 3; i < 9; i++) {
            p.client().write(message(i));
        }
        for (int i = 3; i < 9; i++) {
            try (Message m = p.server().read(Duration.ofSeconds(10))) {
                check(i, m);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"ucx://127.0.0.1:0", "tcp://127.0.0.1:0"})
    void aWriteWhoseFutureWasCancelledDoesNotHoldTheClose(String address) throws Exception {
        // 40 messages, the last beyond the peer's credit, so that the cancelled one is surely still pending.
        Pair p = pair(address, Duration.ofSeconds(30));
        List<CompletableFuture<Void>> writes = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            writes.add(p.client().writeAsync(message(2)));
        }
        CompletableFuture<Void> last = writes.get(39);
        last.cancel(false);
        for (int i = 0; i < 40; i++) {
            try (Message m = p.server().read(Duration.ofSeconds(10))) {
                check(2, m);
            }
        }
        for (int i = 0; i < 39; i++) {
            writes.get(i).get(10, TimeUnit.SECONDS);
        }
        long t0 = System.nanoTime();
        p.client().close();
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(ms < 10_000, "the close took " + ms + " ms (close timeout 30 s)");
        assertThrows(CommClosedException.class, () -> p.server().read(Duration.ofSeconds(20)));
        assertTrue(last.isDone());
    }
}
