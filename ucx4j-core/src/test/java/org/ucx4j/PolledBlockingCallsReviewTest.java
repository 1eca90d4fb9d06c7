package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.ucx4j.PolledBlockingCallsTest.awaitTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.ucx4j.PolledBlockingCallsTest.Blocked;
import org.ucx4j.testing.Loopback;
import org.ucx4j.testsupport.Requirements;

/**
 * A review of 8ea0f86 (blocking tag calls on threaded workers as polled operations): the calls end when
 * their worker closes under them, an interrupted send that UCX holds reports it and leaves the table once
 * done, an already-interrupted caller, many virtual threads at once; and a worker closed by an interrupted
 * thread (as a caller of an interrupted blocking call, which keeps the flag, may well do) while a
 * rendezvous send is in flight, which aborted the process on UCX 1.13 (its close skipped every wait).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@Tag("native")
class PolledBlockingCallsReviewTest {

    private static WorkerOptions opts(ProgressMode mode) {
        return WorkerOptions.builder()
                .progressMode(mode)
                .closeTimeout(Duration.ofSeconds(1))
                .build();
    }

    /** A worker closed while one of its threads waits in a blocking receive: the call ends, no hang. */
    @ParameterizedTest
    @EnumSource(ProgressMode.class)
    void aWorkerClosedUnderABlockingReceiveEndsIt(ProgressMode mode) throws Exception {
        Requirements.assumeUcx();
        try (UcxContext ctx = UcxContext.create()) {
            UcxWorker server = ctx.newWorker(opts(ProgressMode.THREAD_BLOCKING));
            UcxWorker client = ctx.newWorker(opts(mode));
            Loopback.connect(server, client);
            Blocked<TagInfo> unbound = Blocked.start(() -> client.tagRecv(new byte[8], 21, -1L));
            awaitTrue(() -> client.pendingOperations() == 1, "the blocking receive is posted");
            long t0 = System.nanoTime();
            client.close();
            ExecutionException e = assertThrows(
                    ExecutionException.class, () -> unbound.result().get(20, TimeUnit.SECONDS));
            System.out.println(mode + ": receive ended " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)
                    + " ms after close began: " + e.getCause());
            assertTrue(
                    e.getCause() instanceof UcxException || e.getCause() instanceof IllegalStateException,
                    String.valueOf(e.getCause()));
        }
    }

    /** A rendezvous send whose receiver never posts: the worker's close ends the blocking send. */
    @ParameterizedTest
    @EnumSource(ProgressMode.class)
    void aWorkerClosedUnderABlockingRendezvousSendEndsIt(ProgressMode mode) throws Exception {
        Requirements.assumeUcx();
        try (UcxContext ctx = UcxContext.create();
                Arena arena = Arena.ofShared()) {
            UcxWorker server = ctx.newWorker(opts(ProgressMode.THREAD_BLOCKING));
            UcxWorker client = ctx.newWorker(opts(mode));
            Loopback pair = Loopback.connect(server, client);
            MemorySegment big = arena.allocate(4 << 20, 64);
            Blocked<Void> sending = Blocked.start(() -> {
                pair.client().tagSend(big, 33);
                return null;
            });
            awaitTrue(() -> client.pendingOperations() == 1 || sending.result().isDone(), "the send is posted");
            assertTrue(!sending.result().isDone(), "a 4 MiB send waits for its receiver");
            client.close();
            try {
                sending.result().get(20, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                System.out.println(mode + ": send ended with " + e.getCause());
            }
        }
    }

    /**
     * An interrupted rendezvous send whose receiver has not posted: after 2 s the call throws
     * UCS_INPROGRESS; the operation stays in the table, and leaves it once the receiver takes the message.
     */
    @ParameterizedTest
    @EnumSource(ProgressMode.class)
    void anInterruptedSendThatUcxHoldsThrowsInProgressAndIsCompletedLater(ProgressMode mode) throws Exception {
        Requirements.assumeUcx();
        try (UcxContext ctx = UcxContext.create();
                Arena arena = Arena.ofShared()) {
            UcxWorker server = ctx.newWorker(opts(ProgressMode.THREAD_BLOCKING));
            UcxWorker client = ctx.newWorker(opts(mode));
            Loopback pair = Loopback.connect(server, client);
            int size = 4 << 20;
            byte[] heap = new byte[size];
            Arrays.fill(heap, (byte) 5);
            Blocked<Void> sending = Blocked.start(() -> {
                pair.client().tagSend(heap, 34);
                return null;
            });
            awaitTrue(() -> client.pendingOperations() == 1, "the send is posted");
            sending.thread().interrupt();
            ExecutionException e = assertThrows(
                    ExecutionException.class, () -> sending.result().get(30, TimeUnit.SECONDS));
            assertInstanceOf(UcxException.class, e.getCause());
            assertEquals(
                    UcxStatus.INPROGRESS.code(),
                    ((UcxException) e.getCause()).rawStatus(),
                    e.getCause().toString());
            assertTrue(sending.interruptedAfter().get());
            assertEquals(1, client.pendingOperations(), "UCX still holds the send");
            MemorySegment in = arena.allocate(size, 64);
            UcxFuture<TagInfo> got = server.tagRecvAsync(in, 34, -1L);
            awaitTrue(
                    () -> {
                        if (mode == ProgressMode.CALLER) {
                            client.progress();
                        }
                        return got.isDone();
                    },
                    "the receive completes");
            TagInfo info = got.join();
            assertEquals(size, info.length());
            assertEquals((byte) 5, in.get(ValueLayout.JAVA_BYTE, size - 1));
            // Caller mode: someone must progress the client for its poll to find the send done.
            awaitTrue(
                    () -> {
                        if (mode == ProgressMode.CALLER) {
                            client.progress();
                        }
                        return client.pendingOperations() == 0;
                    },
                    "the held send leaves the table once done");
        }
    }

    /** A thread interrupted before it calls: a message that is there is returned, flag kept; else canceled. */
    @ParameterizedTest
    @EnumSource(ProgressMode.class)
    void aCallerAlreadyInterrupted(ProgressMode mode) throws Exception {
        Requirements.assumeUcx();
        try (UcxContext ctx = UcxContext.create()) {
            UcxWorker server = ctx.newWorker(opts(ProgressMode.THREAD_BLOCKING));
            UcxWorker client = ctx.newWorker(opts(mode));
            Loopback pair = Loopback.connect(server, client);
            Blocked<TagInfo> none = Blocked.start(() -> {
                Thread.currentThread().interrupt();
                return client.tagRecv(new byte[8], 41, -1L);
            });
            ExecutionException e =
                    assertThrows(ExecutionException.class, () -> none.result().get(30, TimeUnit.SECONDS));
            assertInstanceOf(UcxCanceledException.class, e.getCause());
            assertTrue(none.interruptedAfter().get());
            awaitTrue(
                    () -> {
                        if (mode == ProgressMode.CALLER) {
                            client.progress();
                        }
                        return client.pendingOperations() == 0;
                    },
                    "nothing left");
            // A send from an interrupted thread still goes.
            byte[] in = new byte[8];
            UcxFuture<TagInfo> got = server.tagRecvAsync(in, 42, -1L);
            Blocked<Void> s = Blocked.start(() -> {
                Thread.currentThread().interrupt();
                pair.client().tagSend(new byte[] {1, 2, 3, 4, 5, 6, 7, 8}, 42);
                return null;
            });
            s.result().get(30, TimeUnit.SECONDS);
            assertTrue(s.interruptedAfter().get());
            assertEquals(8, server.await(got).length());
            assertArrayEquals(new byte[] {1, 2, 3, 4, 5, 6, 7, 8}, in);
        }
    }

    /** Many virtual threads in blocking calls on one worker at once, echoed by as many on the other. */
    @ParameterizedTest
    @EnumSource(
            value = ProgressMode.class,
            names = {"THREAD_BLOCKING", "THREAD_POLLING"})
    void manyVirtualThreadsInBlockingCalls(ProgressMode mode) throws Exception {
        Requirements.assumeUcx();
        try (UcxContext ctx = UcxContext.create()) {
            UcxWorker server = ctx.newWorker(opts(ProgressMode.THREAD_BLOCKING));
            UcxWorker client = ctx.newWorker(opts(mode));
            Loopback pair = Loopback.connect(server, client);
            int threads = 32;
            int rounds = 100;
            List<CompletableFuture<Void>> all = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                long tag = t;
                CompletableFuture<Void> echo = new CompletableFuture<>();
                Thread.ofVirtual().start(() -> {
                    try {
                        byte[] buf = new byte[64];
                        for (int i = 0; i < rounds; i++) {
                            server.tagRecv(buf, tag, -1L);
                            pair.server().tagSend(buf, tag + 1000);
                        }
                        echo.complete(null);
                    } catch (Throwable e) {
                        echo.completeExceptionally(e);
                    }
                });
                CompletableFuture<Void> cl = new CompletableFuture<>();
                Thread.ofVirtual().start(() -> {
                    try {
                        byte[] out = new byte[64];
                        byte[] in = new byte[64];
                        for (int i = 0; i < rounds; i++) {
                            Arrays.fill(out, (byte) (tag * 7 + i));
                            pair.client().tagSend(out, tag);
                            client.tagRecv(in, tag + 1000, -1L);
                            if (!Arrays.equals(out, in)) {
                                throw new AssertionError("wrong echo");
                            }
                        }
                        cl.complete(null);
                    } catch (Throwable e) {
                        cl.completeExceptionally(e);
                    }
                });
                all.add(echo);
                all.add(cl);
            }
            CompletableFuture.allOf(all.toArray(CompletableFuture<?>[]::new)).get(90, TimeUnit.SECONDS);
            assertEquals(0, client.pendingOperations());
            assertEquals(0, server.pendingOperations());
        }
    }

    /** A worker closed by an interrupted thread while a rendezvous send is in flight: no crash, no hang. */
    @ParameterizedTest
    @EnumSource(ProgressMode.class)
    void aWorkerClosedFromAnInterruptedThreadWithARendezvousSendInFlight(ProgressMode mode) throws Exception {
        Requirements.assumeUcx();
        try (UcxContext ctx = UcxContext.create();
                Arena arena = Arena.ofShared()) {
            UcxWorker server = ctx.newWorker(opts(ProgressMode.THREAD_BLOCKING));
            UcxWorker client = ctx.newWorker(opts(mode));
            Loopback pair = Loopback.connect(server, client);
            UcxFuture<Void> sent = pair.client().tagSendAsync(arena.allocate(4 << 20, 64), 35);
            awaitTrue(() -> client.pendingOperations() == 1 || sent.isDone(), "posted");
            Thread.currentThread().interrupt();
            boolean flagAfter;
            try {
                client.close();
            } finally {
                flagAfter = Thread.interrupted();
            }
            assertTrue(flagAfter, "the interrupt flag is kept for the caller");
            assertTrue(sent.isDone(), "the close ended the send");
            assertTrue(sent.isCompletedExceptionally());
        }
    }
}
