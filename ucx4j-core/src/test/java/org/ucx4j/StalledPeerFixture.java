package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * What the tests of a peer that stalls in the middle of a protocol share ({@link StalledRendezvousCloseTest},
 * {@link WireupStallCloseTest}): workers the test progresses itself, with a short close timeout; a message
 * large enough to go by rendezvous; one deadline for every wait; and a side that keeps up on a thread of
 * its own while the test's thread does something else. Each test makes its own peers stall: that is what
 * it tests.
 */
final class StalledPeerFixture {
    /** Large enough to go by rendezvous on every transport. */
    static final int SIZE = 4 << 20;
    /** How long a test waits for what it expects before it fails; the per-test timeout is the backstop. */
    static final long DEADLINE_NANOS = TimeUnit.SECONDS.toNanos(30);

    private StalledPeerFixture() {}

    /** Progressed by the test's threads ({@link ProgressMode#CALLER}), with a close timeout of 300 ms. */
    static WorkerOptions options(boolean peerErrorHandling) {
        return builder(peerErrorHandling).build();
    }

    /** As {@link #options(boolean)}, with a connect timeout other than the default. */
    static WorkerOptions options(boolean peerErrorHandling, Duration connectTimeout) {
        return builder(peerErrorHandling).connectTimeout(connectTimeout).build();
    }

    private static WorkerOptions.Builder builder(boolean peerErrorHandling) {
        return WorkerOptions.builder()
                .progressMode(ProgressMode.CALLER)
                .peerErrorHandling(peerErrorHandling)
                .closeTimeout(Duration.ofMillis(300));
    }

    /**
     * Progresses {@code worker} on a thread of its own (the side that keeps up) until the returned pump is
     * closed; its close waits for that thread to stop.
     */
    static Pump keepProgressing(UcxWorker worker) {
        return new Pump(worker);
    }

    /** A thread that progresses one worker until closed. */
    static final class Pump implements AutoCloseable {
        private final AtomicBoolean pumping = new AtomicBoolean(true);
        private final Thread thread;

        private Pump(UcxWorker worker) {
            thread = Thread.ofPlatform().start(() -> {
                while (pumping.get()) {
                    worker.progress();
                }
            });
        }

        @Override
        public void close() throws InterruptedException {
            pumping.set(false);
            thread.join();
        }
    }

    /** Progresses only {@code worker} until {@code f} is done, and asserts that it is ({@code what} is). */
    static void awaitDone(UcxWorker worker, UcxFuture<?> f, String what) {
        long deadline = System.nanoTime() + DEADLINE_NANOS;
        while (!f.isDone() && System.nanoTime() < deadline) {
            worker.progress();
        }
        assertTrue(f.isDone(), what + " within " + DEADLINE_NANOS / 1_000_000_000 + " s");
    }
}
