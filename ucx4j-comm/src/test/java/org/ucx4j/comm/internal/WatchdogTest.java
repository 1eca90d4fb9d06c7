package org.ucx4j.comm.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ucx4j.comm.CommException;
import org.ucx4j.comm.CommTimeoutException;

/**
 * {@link Watchdog#within}: the work's end and the deadline race, and exactly one wins. A result whose
 * connection the abort closed is never handed out (it is closed instead), and a result handed out never
 * sees the abort.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class WatchdogTest {
    private static final Duration WAIT = Duration.ofSeconds(30);

    /** Stands for a comm built on a connection: closing it is what a timed-out caller must not forget. */
    static final class Resource implements AutoCloseable {
        final AtomicInteger closes = new AtomicInteger();

        @Override
        public void close() {
            closes.incrementAndGet();
        }
    }

    static void await(CountDownLatch latch) {
        try {
            if (!latch.await(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                throw new AssertionError("not within " + WAIT);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    @Test
    void workThatFinishesWhileTheAbortRunsIsATimeoutAndItsResultIsClosed() {
        // The deadline fires and its abort is still running (closing the connection) when the work,
        // which did not notice, returns its result: the result must not reach the caller.
        CountDownLatch abortStarted = new CountDownLatch(1);
        CountDownLatch abortMayEnd = new CountDownLatch(1);
        Resource made = new Resource();
        CommTimeoutException e = assertThrows(
                CommTimeoutException.class,
                () -> Watchdog.within(
                        Duration.ofMillis(1),
                        "the handshake",
                        () -> {
                            abortStarted.countDown();
                            await(abortMayEnd);
                        },
                        () -> {
                            await(abortStarted);
                            return made;
                        }));
        abortMayEnd.countDown();
        assertTrue(e.getMessage().contains("the handshake did not finish within"), e.getMessage());
        assertEquals(1, made.closes.get(), "the result of a timed-out handshake was not closed");
    }

    @Test
    void workThatFinishesAfterTheAbortEndedIsATimeoutAndItsResultIsClosed() {
        CountDownLatch aborted = new CountDownLatch(1);
        Resource made = new Resource();
        assertThrows(
                CommTimeoutException.class,
                () -> Watchdog.within(Duration.ofMillis(1), "the handshake", aborted::countDown, () -> {
                    await(aborted);
                    return made;
                }));
        assertEquals(1, made.closes.get(), "the result of a timed-out handshake was not closed");
    }

    @Test
    void workThatFinishesFirstIsReturnedAndNeverAborted() {
        AtomicBoolean aborted = new AtomicBoolean();
        Resource made = new Resource();
        assertEquals(
                made, Watchdog.within(Duration.ofMillis(50), "the handshake", () -> aborted.set(true), () -> made));
        // Well past the deadline: the cancelled timer must not abort a connection already handed out.
        CountDownLatch later = new CountDownLatch(1);
        CommTimers.after(Duration.ofMillis(200), later::countDown);
        await(later);
        assertFalse(aborted.get(), "the abort ran on a connection that was handed out");
        assertEquals(0, made.closes.get());
    }

    @Test
    void aFailureAfterTheDeadlineIsATimeoutAndOneBeforeItIsItself() {
        CountDownLatch aborted = new CountDownLatch(1);
        CommTimeoutException timedOut = assertThrows(
                CommTimeoutException.class,
                () -> Watchdog.within(Duration.ofMillis(1), "the handshake", aborted::countDown, () -> {
                    await(aborted);
                    throw new java.io.IOException("socket closed");
                }));
        assertTrue(timedOut.getCause() instanceof java.io.IOException);
        CommException failed = assertThrows(
                CommException.class,
                () -> Watchdog.within(Duration.ofSeconds(30), "the handshake", () -> {}, () -> {
                    throw new java.io.IOException("reset by peer");
                }));
        assertFalse(failed instanceof CommTimeoutException);
        assertTrue(failed.getMessage().contains("the handshake failed"), failed.getMessage());
    }

    /**
     * Work ending right at the deadline, many times: each run either returns a result that the abort
     * never touched, or times out with the result closed; never a returned result that was aborted, nor
     * a dropped one left open.
     */
    @RepeatedTest(5)
    void atTheDeadlineExactlyOneSideWins() {
        for (int i = 0; i < 200; i++) {
            AtomicBoolean aborted = new AtomicBoolean();
            Resource made = new Resource();
            long deadline = System.nanoTime() + 1_000_000;
            try {
                Resource got = Watchdog.within(Duration.ofMillis(1), "the handshake", () -> aborted.set(true), () -> {
                    while (System.nanoTime() < deadline) {
                        Thread.onSpinWait();
                    }
                    return made;
                });
                // Returned: the abort must never run, not even later.
                CountDownLatch later = new CountDownLatch(1);
                CommTimers.after(Duration.ofMillis(5), later::countDown);
                await(later);
                assertFalse(aborted.get(), "run " + i + ": a returned result was aborted");
                assertEquals(0, got.closes.get());
            } catch (CommTimeoutException e) {
                assertEquals(1, made.closes.get(), "run " + i + ": a timed-out result was left open");
            }
        }
    }
}
