package org.ucx4j;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.ucx4j.testsupport.Requirements;

/**
 * Operations submitted by many threads while {@link UcxWorker#close()} runs: each either starts and then
 * completes (done, failed or canceled), or is refused at once with an {@link IllegalStateException} that
 * says the worker is closed. None crashes the process (a UCX call on a destroyed worker would), none
 * waits forever (a task queued after the worker's last drain would), and the process's descriptors
 * and threads come back.
 */
@Tag("native")
// 3 x 40 rounds take 10-20 s on a quiet machine and over 180 s under a load of 40 (a suite beside
// another): the per-round deadlines below are the hang checks; this bound only ends the run.
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class WorkerCloseRaceTest {
    private static final Duration DEADLINE = Duration.ofSeconds(30);
    private static final int THREADS = 8;
    private static final int ROUNDS = 40;

    static long openFds() throws Exception {
        try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
            return s.count();
        }
    }

    /** Workers' progress threads alive now (a closed worker's must be gone). */
    static long progressThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.isAlive() && t.getName().endsWith("-progress"))
                .count();
    }

    /** What one submitting thread does, in turn, until the worker refuses it. */
    private static void submitUntilRefused(
            int thread,
            UcxWorker worker,
            UcxEndpoint ep,
            CountDownLatch submitting,
            ConcurrentLinkedQueue<UcxFuture<?>> started,
            ConcurrentLinkedQueue<Throwable> wrong) {
        // A bounded window per thread: UCX 1.13 aborts past 254 worker flushes in flight at once
        // (ucp_worker_flush_nbx: an endpoint's 8-bit reference count), whoever closes what.
        java.util.ArrayDeque<UcxFuture<?>> window = new java.util.ArrayDeque<>();
        try {
            for (long i = 0; ; i++) {
                long tag = ((long) thread << 32) | (i & 0xFFFF);
                UcxFuture<?> f =
                        switch ((int) (i % 5)) {
                            case 0 -> worker.tagRecvAsync(new byte[64], tag, -1L);
                            case 1 -> ep != null ? ep.tagSendAsync(new byte[64], tag) : worker.flushAsync();
                            case 2 -> worker.flushAsync();
                            case 3 -> {
                                // blocking: waits (and, in CALLER mode, progresses the worker itself)
                                if (ep != null) {
                                    ep.tagSend(new byte[8], tag | (1L << 62));
                                } else {
                                    worker.await(worker.flushAsync());
                                }
                                yield null;
                            }
                            default -> ep != null ? ep.flushAsync() : worker.tagRecvAsync(new byte[8], tag, -1L);
                        };
                if (f != null) {
                    started.add(f);
                    if (i % 5 != 0) { // receives wait for a sender that never comes: not in the window
                        window.add(f);
                    }
                }
                while (window.size() > 16) {
                    try {
                        worker.await(window.poll());
                    } catch (UcxException failed) {
                        // failed or canceled by the close: clean
                    }
                }
                if (i == 10) {
                    submitting.countDown();
                }
            }
        } catch (IllegalStateException refused) {
            if (!refused.getMessage().contains("closed")) {
                wrong.add(refused);
            }
        } catch (UcxException failedWhileClosing) {
            // A blocking send whose operation the close canceled or failed: a clean error.
        } catch (Throwable t) {
            wrong.add(t);
        } finally {
            submitting.countDown();
        }
    }

    @ParameterizedTest
    @EnumSource(ProgressMode.class)
    void operationsRacingCloseFailCleanlyAndNothingHangsOrLeaks(ProgressMode mode) throws Exception {
        Requirements.assumeUcx();
        try (UcxContext ctx = UcxContext.create()) {
            runRound(ctx, mode, true); // UCX's transports are up before counting
            long fdsBefore = openFds();
            long progressThreadsBefore = progressThreads();
            AtomicInteger refusedOrFailed = new AtomicInteger();
            for (int round = 0; round < ROUNDS; round++) {
                // With an endpoint, the close takes a while (it closes it first); without, the close is
                // quick, and a submitter that passed the open check just before it is more likely to
                // reach UCX after the worker is gone.
                refusedOrFailed.addAndGet(runRound(ctx, mode, round % 4 == 0));
            }
            assertTrue(refusedOrFailed.get() > 0, "no operation ever met the close: the race was not exercised");
            await("descriptors back at " + fdsBefore)
                    .atMost(DEADLINE)
                    .untilAsserted(() -> assertTrue(openFds() <= fdsBefore, openFds() + " open"));
            await("progress threads back at " + progressThreadsBefore)
                    .atMost(DEADLINE)
                    .untilAsserted(() -> assertEquals(progressThreadsBefore, progressThreads()));
        }
    }

    /** One worker, closed while {@link #THREADS} threads submit; returns how many operations failed. */
    private static int runRound(UcxContext ctx, ProgressMode mode, boolean withEndpoint) throws Exception {
        UcxWorker worker =
                ctx.newWorker(WorkerOptions.builder().progressMode(mode).build());
        UcxEndpoint ep = withEndpoint ? worker.connect(worker.address()) : null;
        ConcurrentLinkedQueue<UcxFuture<?>> started = new ConcurrentLinkedQueue<>();
        ConcurrentLinkedQueue<Throwable> wrong = new ConcurrentLinkedQueue<>();
        CountDownLatch submitting = new CountDownLatch(THREADS);
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            int id = t;
            threads.add(Thread.ofPlatform()
                    .name("submitter-" + t)
                    .start(() -> submitUntilRefused(id, worker, ep, submitting, started, wrong)));
        }
        assertTrue(submitting.await(DEADLINE.toSeconds(), TimeUnit.SECONDS), "the submitters never got going");
        worker.close();
        for (Thread t : threads) {
            t.join(DEADLINE.toMillis());
            assertTrue(!t.isAlive(), t.getName() + " still blocked after the worker closed");
        }
        assertEquals(List.of(), List.copyOf(wrong), "an operation racing close failed in an unclean way");
        int failed = 0;
        for (UcxFuture<?> f : started) {
            try {
                f.get(DEADLINE.toSeconds(), TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                Throwable cause = e.getCause();
                boolean clean = cause instanceof UcxException
                        || (cause instanceof IllegalStateException
                                && cause.getMessage().contains("closed"));
                assertTrue(clean, "unclean failure: " + cause);
                failed++;
            } catch (java.util.concurrent.CancellationException e) {
                failed++;
            }
        }
        return failed;
    }
}
