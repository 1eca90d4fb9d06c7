package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.ucx4j.testing.Loopback;
import org.ucx4j.testsupport.Requirements;

/**
 * Pins the threading contract (package-info): continuations of ucx4j futures and handlers run on the
 * worker's progress thread in the threaded modes, even while another thread submits operations or waits
 * in a blocking call on the same worker; in caller mode, on the thread that progresses the worker.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@Tag("native")
class ThreadingContractTest {
    private static final Duration WAIT = Duration.ofSeconds(30);

    /** The test runs once per threaded progress mode. */
    @Retention(RetentionPolicy.RUNTIME)
    @Target(ElementType.METHOD)
    @ParameterizedTest
    @EnumSource(
            value = ProgressMode.class,
            names = {"THREAD_BLOCKING", "THREAD_POLLING"})
    @interface ThreadedModes {}

    /** A context with two workers in one progress mode. */
    private record Workers(UcxContext ctx, UcxWorker server, UcxWorker client) implements AutoCloseable {
        static Workers open(ProgressMode mode) {
            Requirements.assumeUcx();
            WorkerOptions options = WorkerOptions.builder().progressMode(mode).build();
            UcxContext ctx = UcxContext.create();
            try {
                return new Workers(ctx, ctx.newWorker(options), ctx.newWorker(options));
            } catch (RuntimeException e) {
                ctx.close();
                throw e;
            }
        }

        @Override
        public void close() {
            ctx.close(); // closes its workers
        }
    }

    @ThreadedModes
    void continuationsAndHandlersRunOnTheProgressThread(ProgressMode mode) throws Exception {
        try (Workers w = Workers.open(mode)) {
            UcxWorker server = w.server();
            UcxWorker client = w.client();
            String progressThread = server.name() + "-progress";
            Loopback pair = Loopback.connect(server, client);

            // A continuation attached before completion, while this thread waits in a blocking receive of
            // the same worker: it runs on the progress thread, not on the waiting thread.
            AtomicReference<String> continuation = new AtomicReference<>();
            UcxFuture<TagInfo> first = server.tagRecvAsync(new byte[8], 1, -1L, pair.server());
            CompletableFuture<Void> ran =
                    first.thenRun(() -> continuation.set(Thread.currentThread().getName()));
            client.await(pair.client().tagSendAsync(new byte[8], 1));
            pair.client().tagSend(new byte[8], 2);
            server.tagRecv(new byte[8], 2, -1L); // blocks here, on this thread
            ran.get(30, TimeUnit.SECONDS);
            assertEquals(progressThread, continuation.get(), "continuation thread");
            assertNotEquals(Thread.currentThread().getName(), continuation.get());

            // An active-message handler, and the body future's continuation.
            AtomicReference<String> handler = new AtomicReference<>();
            AtomicReference<String> body = new AtomicReference<>();
            CountDownLatch handled = new CountDownLatch(1);
            server.setAmHandler(7, m -> {
                handler.set(Thread.currentThread().getName());
                m.data().thenRun(() -> {
                    body.set(Thread.currentThread().getName());
                    handled.countDown();
                });
            });
            pair.client().amSend(7, MemorySegment.NULL, MemorySegment.ofArray(new byte[100_000]), AmSendMode.AUTO);
            handled.await(30, TimeUnit.SECONDS);
            assertEquals(progressThread, handler.get(), "AM handler thread");
            assertEquals(progressThread, body.get(), "AM body continuation thread");

            // cancel() only asks: the canceled future's continuation runs on the progress thread.
            AtomicReference<String> canceled = new AtomicReference<>();
            UcxFuture<TagInfo> pending = server.tagRecvAsync(new byte[8], 99, -1L);
            CompletableFuture<Void> after = pending.handle((v, e) -> null)
                    .thenRun(() -> canceled.set(Thread.currentThread().getName()));
            // handle() registered on a pending future; the thenRun is attached to handle's plain future.
            pending.cancel(true);
            after.get(30, TimeUnit.SECONDS);
            assertEquals(progressThread, canceled.get(), "continuation of a canceled receive");

            // A thread that submits operations while a completion is due does not run it.
            AtomicReference<String> viaSubmitter = new AtomicReference<>();
            UcxFuture<TagInfo> third = server.tagRecvAsync(new byte[8], 3, -1L);
            CompletableFuture<Void> ran3 =
                    third.thenRun(() -> viaSubmitter.set(Thread.currentThread().getName()));
            pair.client().tagSendAsync(new byte[8], 3);
            for (int i = 0; i < 100 && !third.isDone(); i++) {
                server.tagRecvAsync(new byte[8], 1000 + i, -1L).cancel(true); // submits on this thread
            }
            ran3.get(30, TimeUnit.SECONDS);
            assertEquals(progressThread, viaSubmitter.get(), "continuation while another thread submits");

            // progress() from a user thread runs no round on a threaded worker: the completion due stays
            // with the progress thread.
            AtomicReference<String> viaProgress = new AtomicReference<>();
            UcxFuture<TagInfo> fourth = server.tagRecvAsync(new byte[8], 4, -1L);
            CompletableFuture<Void> ran4 =
                    fourth.thenRun(() -> viaProgress.set(Thread.currentThread().getName()));
            pair.client().tagSendAsync(new byte[8], 4);
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!fourth.isDone() && System.nanoTime() < until) {
                assertEquals(0, server.progress(), "progress() on a threaded worker");
            }
            ran4.get(30, TimeUnit.SECONDS);
            assertEquals(progressThread, viaProgress.get(), "continuation while another thread calls progress()");
        }
    }

    /**
     * UCX is not called again from inside its own callbacks: an operation submitted by a continuation that
     * runs inside one (here a receive that matches a message already here, which UCX would complete inside
     * the call) reaches UCX once the callback has returned, in the same round. (UCX 1.13's tcp transport
     * crashed when a send made from a callback failed inside the receive handler of a closing endpoint.)
     */
    /**
     * A thread parked in {@code get()}, {@code join()} or {@link UcxWorker#await} on a pending future, which
     * wakes when the future completes, runs none of the stages attached before it (a plain {@code
     * CompletableFuture}'s waiter may: it "helps" the completing thread). The message is sent only once the
     * waiter is parked, so that the completion finds it asleep.
     */
    @ThreadedModes
    void aThreadWaitingForAFutureRunsNoneOfItsStages(ProgressMode mode) throws Exception {
        try (Workers w = Workers.open(mode)) {
            UcxWorker server = w.server();
            UcxWorker client = w.client();
            String progressThread = server.name() + "-progress";
            Loopback pair = Loopback.connect(server, client);
            for (int round = 0; round < 30; round++) {
                int way = round % 3;
                long tag = 100 + round;
                UcxFuture<TagInfo> got = server.tagRecvAsync(new byte[8], tag, -1L, pair.server());
                AtomicReference<String> stage = new AtomicReference<>();
                CompletableFuture<Void> ran =
                        got.thenRun(() -> stage.set(Thread.currentThread().getName()));
                Thread me = Thread.currentThread();
                Thread sender = Thread.ofPlatform().start(() -> {
                    long deadline = System.nanoTime() + WAIT.toNanos();
                    while (me.getState() != Thread.State.WAITING && me.getState() != Thread.State.TIMED_WAITING) {
                        if (System.nanoTime() - deadline > 0) {
                            break; // the assertion below still holds; the round proves less
                        }
                        Thread.onSpinWait();
                    }
                    client.await(pair.client().tagSendAsync(new byte[8], tag));
                });
                switch (way) {
                    case 0 -> got.get();
                    case 1 -> got.join();
                    default -> server.await(got);
                }
                sender.join();
                ran.get(30, TimeUnit.SECONDS);
                assertEquals(progressThread, stage.get(), "round " + round + " (way " + way + "): stage thread");
            }
        }
    }

    /** Timed waits that time out, again and again on one pending future, leave no pile of stages on it. */
    @ThreadedModes
    void timedWaitsOnAPendingFutureDoNotPileUpStages(ProgressMode mode) throws Exception {
        try (Workers w = Workers.open(mode)) {
            UcxWorker server = w.server();
            UcxWorker client = w.client();
            Loopback pair = Loopback.connect(server, client);
            UcxFuture<TagInfo> got = server.tagRecvAsync(new byte[8], 77, -1L, pair.server());
            for (int i = 0; i < 300; i++) {
                assertThrows(java.util.concurrent.TimeoutException.class, () -> got.get(0, TimeUnit.MILLISECONDS));
                assertThrows(UcxTimeoutException.class, () -> server.await(got, Duration.ofNanos(1000)));
            }
            assertTrue(got.getNumberOfDependents() <= 2, "stages left on the future: " + got.getNumberOfDependents());
            client.await(pair.client().tagSendAsync(new byte[8], 77));
            assertEquals(8, got.get(30, TimeUnit.SECONDS).length());
        }
    }

    @ThreadedModes
    void operationsSubmittedInsideACallbackReachUcxAfterItReturns(ProgressMode mode) throws Exception {
        try (Workers w = Workers.open(mode)) {
            UcxWorker server = w.server();
            UcxWorker client = w.client();
            Loopback pair = Loopback.connect(server, client);
            client.await(pair.client().tagSendAsync(new byte[8], 5));
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (server.tagProbe(5, -1L).isEmpty()) {
                if (System.nanoTime() - deadline > 0) {
                    throw new AssertionError("the message on tag 5 did not arrive within " + WAIT);
                }
                Thread.onSpinWait();
            }
            CompletableFuture<Boolean> doneWhenSubmitted = new CompletableFuture<>();
            CompletableFuture<TagInfo> nested = new CompletableFuture<>();
            UcxFuture<TagInfo> first = server.tagRecvAsync(new byte[8], 4, -1L, pair.server());
            first.thenRun(() -> {
                UcxFuture<TagInfo> inner = server.tagRecvAsync(new byte[8], 5, -1L, pair.server());
                doneWhenSubmitted.complete(inner.isDone());
                inner.whenComplete((v, e) -> {
                    if (e != null) {
                        nested.completeExceptionally(e);
                    } else {
                        nested.complete(v);
                    }
                });
            });
            pair.client().tagSend(new byte[8], 4);
            assertFalse(
                    doneWhenSubmitted.get(30, TimeUnit.SECONDS),
                    "the receive ran inside the callback that submitted it");
            assertEquals(8, nested.get(30, TimeUnit.SECONDS).length());
        }
    }

    @Test
    void callerModeRunsContinuationsOnTheThreadThatProgresses() throws Exception {
        Requirements.assumeUcx();
        try (UcxContext ctx = UcxContext.create();
                UcxWorker server = ctx.newWorker();
                UcxWorker client = ctx.newWorker(WorkerOptions.builder()
                        .progressMode(ProgressMode.CALLER)
                        .build())) {
            CompletableFuture<UcxEndpoint> accepted = new CompletableFuture<>();
            UcxListener listener = server.listen(0, accepted::complete);
            UcxEndpoint ep = client.connect("127.0.0.1", listener.port()); // progresses client on this thread
            UcxEndpoint back = accepted.get(30, TimeUnit.SECONDS);

            AtomicReference<String> continuation = new AtomicReference<>();
            UcxFuture<TagInfo> received = client.tagRecvAsync(new byte[8], 5, -1L, ep);
            received.thenRun(() -> continuation.set(Thread.currentThread().getName()));
            back.tagSend(new byte[8], 5);
            AtomicBoolean stop = new AtomicBoolean();
            Thread driver = Thread.ofPlatform().name("caller-driver").start(() -> {
                while (!stop.get() && !received.isDone()) {
                    client.progress();
                }
            });
            driver.join(WAIT.toMillis());
            stop.set(true);
            assertEquals("caller-driver", continuation.get(), "continuation thread in caller mode");
        }
    }
}
