package org.ucx4j;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ucx4j.testing.Loopback;
import org.ucx4j.testsupport.Requirements;

/**
 * A {@link UcxFuture} cannot be finished by user code while UCX owns its buffer: every completing method
 * is refused, and the two that end an operation early ({@code cancel}, {@code orTimeout}) go through
 * UCX. Each case then frees the receive buffer and sends into the same tag: the message must not land in
 * freed memory (it stays unexpected, and a new receive gets it whole).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@Tag("native")
class UcxFutureSafetyTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static UcxContext ctx;
    private static UcxWorker server;
    private static UcxWorker client;
    private static Loopback pair;

    @BeforeAll
    static void connect() throws Exception {
        Requirements.assumeUcx();
        ctx = UcxContext.create();
        server = ctx.newWorker();
        client = ctx.newWorker();
        pair = Loopback.connect(server, client);
    }

    @AfterAll
    static void close() {
        if (ctx != null) {
            ctx.close();
        }
    }

    private static final List<Consumer<UcxFuture<TagInfo>>> COMPLETIONS = List.of(
            f -> f.complete(new TagInfo(0, 0)),
            f -> f.completeExceptionally(new RuntimeException("user")),
            f -> f.obtrudeValue(new TagInfo(0, 0)),
            f -> f.obtrudeException(new RuntimeException("user")),
            f -> f.completeAsync(() -> new TagInfo(0, 0)),
            f -> f.completeAsync(() -> new TagInfo(0, 0), ForkJoinPool.commonPool()),
            f -> f.completeOnTimeout(new TagInfo(0, 0), 1, TimeUnit.MILLISECONDS),
            f -> f.toCompletableFuture().complete(new TagInfo(0, 0)));

    @Test
    void everyCompletingMethodIsRefusedAndTheBufferStaysUcxs() throws Exception {
        long tag = 0x5AFE_0001L;
        Arena arena = Arena.ofShared();
        MemorySegment buffer = arena.allocate(64);
        UcxFuture<TagInfo> received = server.tagRecvAsync(buffer, tag, -1L);
        for (Consumer<UcxFuture<TagInfo>> attempt : COMPLETIONS) {
            UnsupportedOperationException e =
                    assertThrows(UnsupportedOperationException.class, () -> attempt.accept(received));
            assertTrue(e.getMessage().contains("only ucx4j completes"), e.getMessage());
        }
        assertSame(received, received.toCompletableFuture());
        // Dependents are plain futures: completing them leaves the operation alone.
        assertTrue(received.copy().complete(new TagInfo(1, 1)));
        assertTrue(received.thenApply(TagInfo::length).complete(7L));
        assertTrue(received.minimalCompletionStage().toCompletableFuture().complete(new TagInfo(2, 2)));
        assertFalse(received.isDone(), "no attempt may finish the UCX operation");

        // UCX still owns the buffer and writes into it; only then is the future done and the arena freed.
        pair.client().tagSend(pattern(64, 3), tag);
        assertEquals(64, server.await(received, WAIT).length());
        assertEquals(-1L, buffer.mismatch(pattern(64, 3)));
        arena.close();
    }

    @Test
    void cancelCompletesOnlyWhenUcxReleasedTheBuffer() throws Exception {
        long tag = 0x5AFE_0002L;
        Arena arena = Arena.ofShared();
        UcxFuture<TagInfo> received = server.tagRecvAsync(arena.allocate(64), tag, -1L);
        assertTrue(received.cancel(true));
        ExecutionException e = assertThrows(ExecutionException.class, () -> received.get(30, TimeUnit.SECONDS));
        assertInstanceOf(UcxCanceledException.class, e.getCause());
        assertFalse(received.cancel(true), "a done future cannot be canceled again");
        arena.close();
        sendIntoFreedTagAndReceiveIntact(tag);
    }

    @Test
    void orTimeoutCancelsThroughUcx() throws Exception {
        long tag = 0x5AFE_0003L;
        Arena arena = Arena.ofShared();
        UcxFuture<TagInfo> received = server.tagRecvAsync(arena.allocate(64), tag, -1L);
        assertSame(received, received.orTimeout(50, TimeUnit.MILLISECONDS));
        CompletionException e = assertThrows(CompletionException.class, received::join);
        assertInstanceOf(UcxTimeoutException.class, e.getCause());
        arena.close();
        sendIntoFreedTagAndReceiveIntact(tag);
    }

    @Test
    void blockingReceiveWithTimeoutReturnsOnlyAfterUcxReleasedTheBuffer() throws Exception {
        long tag = 0x5AFE_0004L;
        Arena arena = Arena.ofShared();
        assertThrows(
                UcxTimeoutException.class, () -> server.tagRecv(arena.allocate(64), tag, -1L, Duration.ofMillis(50)));
        arena.close();
        sendIntoFreedTagAndReceiveIntact(tag);
    }

    @Test
    void simpleActiveMessageReceivesCancelAndLaterMessagesGoToTheNextReceive() throws Exception {
        try (UcxWorker s = ctx.newWorker();
                UcxWorker c = ctx.newWorker()) {
            Loopback amPair = Loopback.connect(s, c);
            UcxFuture<MemorySegment> first = amPair.server().amRecvAsync();
            assertTrue(first.cancel(false));
            CompletionException e = assertThrows(CompletionException.class, first::join);
            assertInstanceOf(UcxCanceledException.class, e.getCause());
            amPair.client().amSend(pattern(16, 9));
            MemorySegment got = s.await(amPair.server().amRecvAsync(), WAIT);
            assertEquals(-1L, got.mismatch(pattern(16, 9)));

            UcxFuture<MemorySegment> timed = amPair.server().amRecvAsync().orTimeout(50, TimeUnit.MILLISECONDS);
            assertInstanceOf(
                    UcxTimeoutException.class,
                    assertThrows(CompletionException.class, timed::join).getCause());
        }
    }

    @Test
    void aCloseCannotTimeOutEarly() throws Exception {
        try (UcxWorker s = ctx.newWorker();
                UcxWorker c = ctx.newWorker()) {
            Loopback other = Loopback.connect(s, c);
            UcxFuture<Void> closing = other.client().closeAsync(CloseMode.FLUSH);
            // The close may finish at any moment: orTimeout either refuses (the close still runs) or returns
            // because it was already done; it never arms a timeout that could fail the close early.
            try {
                closing.orTimeout(1, TimeUnit.MILLISECONDS);
                assertTrue(closing.isDone(), "orTimeout accepted on a close that was still running");
            } catch (UnsupportedOperationException refused) {
                // the close was still running
            }
            assertFalse(closing.cancel(true) && !closing.isDone(), "a close is not cancelable");
            c.await(closing, WAIT);
        }
    }

    /** The tag's earlier receive is gone: a message sent now must wait, unexpected, for a new receive. */
    private static void sendIntoFreedTagAndReceiveIntact(long tag) throws Exception {
        MemorySegment expected = pattern(64, (int) (tag & 0x7f));
        CompletableFuture<Void> sent = pair.client().tagSendAsync(expected, tag);
        client.await(sent, WAIT);
        await().atMost(WAIT).until(() -> server.tagProbe(tag, -1L).isPresent());
        try (Arena fresh = Arena.ofConfined()) {
            MemorySegment into = fresh.allocate(64);
            TagInfo info = server.tagRecv(into, tag, -1L);
            assertEquals(64, info.length());
            assertEquals(-1L, into.mismatch(expected), "the message reached the new receive whole");
        }
    }

    private static MemorySegment pattern(int size, int seed) {
        MemorySegment s = Arena.global().allocate(size);
        for (int i = 0; i < size; i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) (seed * 31 + i));
        }
        return s;
    }
}
