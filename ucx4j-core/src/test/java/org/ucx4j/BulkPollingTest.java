package org.ucx4j;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.ucx4j.testing.Loopback;
import org.ucx4j.testsupport.Requirements;

/**
 * A thread-blocking worker polls for a while after progress when a bulk operation is in flight (a send
 * or RMA of 64 KiB or more, or a receive of that size into GPU memory: UCX reports GPU copies through the
 * event fd late), and the polling is bounded: a large host-memory receive that waits for a message that
 * does not come leaves the progress thread asleep, not spinning, even while small messages arrive; and
 * a zero spin turns the polling off.
 */
@Tag("native")
class BulkPollingTest {
    /** The window over which the progress thread's CPU time is measured. */
    private static final Duration WINDOW = Duration.ofSeconds(2);
    /** Linux's clock ticks per second, the unit of {@code utime} and {@code stime} in /proc. */
    private static final long TICKS_PER_SECOND = 100;
    /** How often the light traffic sends an 8-byte message. */
    private static final long TRAFFIC_PERIOD_MICROS = 2_000;

    private static final long TRAFFIC_TAG = 0x7aff1c;
    private static final long BULK_TAG = 0x5eed;

    @Test
    void aWaitingBulkReceiveLeavesTheProgressThreadAsleep() {
        Requirements.assumeUcx();
        try (UcxContext ctx = UcxContext.create();
                UcxWorker worker =
                        ctx.newWorker(WorkerOptions.builder().name("bp").build());
                Arena arena = Arena.ofShared()) {
            UcxFuture<TagInfo> pending = worker.tagRecvAsync(arena.allocate(1 << 20), BULK_TAG, -1L);

            Measured m = measure(worker, null);

            assertMostlyAsleep(m, "only a waiting 1 MiB receive in flight: it should sleep");
            assertFalse(pending.isDone(), "nothing was sent, so the receive is still waiting");
            cancelAndAwaitFailure(worker, pending);
        }
    }

    /**
     * A waiting 1 MiB host-memory receive does not make each small message that arrives meanwhile buy a
     * millisecond of polling (it did: 770-840 ms of CPU in 2 s).
     */
    @Test
    void aWaitingBulkReceiveWithLightTrafficLeavesTheProgressThreadMostlyAsleep() throws Exception {
        Requirements.assumeUcx();
        try (UcxContext ctx = UcxContext.create();
                UcxWorker server =
                        ctx.newWorker(WorkerOptions.builder().name("bpr").build());
                UcxWorker client = ctx.newWorker();
                Arena arena = Arena.ofShared()) {
            Loopback pair = Loopback.connect(server, client);
            UcxFuture<TagInfo> pending = server.tagRecvAsync(arena.allocate(1 << 20), BULK_TAG, -1L);

            Measured m = underLightTraffic(server, pair.client(), arena);

            assertMostlyAsleep(m, "a waiting 1 MiB receive in flight");
            assertFalse(pending.isDone(), "nothing was sent to the bulk tag, so the receive is still waiting");
            cancelAndAwaitFailure(server, pending);
        }
    }

    /**
     * With a zero spin a worker does not poll even while a bulk send is in flight (here a 1 MiB send that
     * waits for its receiver): WorkerOptions' zero spin turns polling off.
     */
    @Test
    void aZeroSpinTurnsTheBulkPollingOff() throws Exception {
        Requirements.assumeUcx();
        try (UcxContext ctx = UcxContext.create();
                UcxWorker server = ctx.newWorker();
                UcxWorker client = ctx.newWorker(
                        WorkerOptions.builder().name("bpz").spin(Duration.ZERO).build());
                Arena arena = Arena.ofShared()) {
            Loopback pair = Loopback.connect(server, client);
            UcxFuture<Void> bulkSend = pair.client().tagSendAsync(arena.allocate(1 << 20), BULK_TAG);

            Measured m = underLightTraffic(client, pair.server(), arena);

            assertMostlyAsleep(m, "a zero spin and a waiting 1 MiB send in flight");
            server.await(server.tagRecvAsync(arena.allocate(1 << 20), BULK_TAG, -1L), Duration.ofSeconds(30));
            client.await(bulkSend, Duration.ofSeconds(30));
        }
    }

    /** The measured progress thread's CPU time over {@link #WINDOW}, and the light traffic it saw. */
    private record Measured(long cpuMillis, long wallMillis, int messages) {}

    /**
     * Measures {@code measured}'s progress thread over {@link #WINDOW} while {@code sender} sends it an
     * 8-byte message every {@link #TRAFFIC_PERIOD_MICROS} µs, each into a receive posted for it.
     */
    private static Measured underLightTraffic(UcxWorker measured, UcxEndpoint sender, Arena arena) {
        MemorySegment out = arena.allocate(8);
        AtomicInteger received = new AtomicInteger();
        ScheduledExecutorService traffic = Executors.newSingleThreadScheduledExecutor();
        try {
            traffic.scheduleAtFixedRate(
                    () -> {
                        measured.tagRecvAsync(arena.allocate(8), TRAFFIC_TAG, -1L)
                                .thenRun(received::incrementAndGet);
                        sender.tagSendAsync(out, TRAFFIC_TAG);
                    },
                    0,
                    TRAFFIC_PERIOD_MICROS,
                    TimeUnit.MICROSECONDS);
            Measured m = measure(measured, received);
            assertTrue(m.messages() > 0, "the light traffic flowed");
            return m;
        } finally {
            traffic.shutdownNow();
        }
    }

    /** The CPU time of {@code worker}'s progress thread over {@link #WINDOW}; {@code messages} may be null. */
    private static Measured measure(UcxWorker worker, AtomicInteger messages) {
        // The JVM names native threads after Java threads (cut to 15 characters on Linux).
        String threadName = worker.name() + "-progress";
        Path task = progressTask(threadName.substring(0, Math.min(15, threadName.length())));
        long ticks0 = cpuTicks(task);
        long wall0 = System.nanoTime();
        await().pollDelay(WINDOW).atMost(WINDOW.plusSeconds(30)).until(() -> true);
        long cpuMillis = (cpuTicks(task) - ticks0) * 1000 / TICKS_PER_SECOND;
        long wallMillis = (System.nanoTime() - wall0) / 1_000_000;
        return new Measured(cpuMillis, wallMillis, messages == null ? 0 : messages.get());
    }

    private static void assertMostlyAsleep(Measured m, String with) {
        assertTrue(
                m.cpuMillis() < m.wallMillis() / 4,
                "the progress thread used " + m.cpuMillis() + " ms of CPU in " + m.wallMillis() + " ms (" + m.messages()
                        + " 8-byte messages) with " + with);
    }

    private static void cancelAndAwaitFailure(UcxWorker worker, UcxFuture<TagInfo> pending) {
        pending.cancel(true);
        boolean failed = worker.await(pending.handle((v, e) -> e != null), Duration.ofSeconds(30));
        assertTrue(failed, "the canceled receive fails");
    }

    /**
     * The /proc folder of this process's thread named {@code comm}. A started thread sets its native name
     * itself, a moment after {@code Thread.start} returns, so this waits (with a deadline) for the name.
     */
    private static Path progressTask(String comm) {
        AtomicReference<Path> found = new AtomicReference<>();
        try {
            await().atMost(Duration.ofSeconds(10))
                    .pollInterval(Duration.ofMillis(5))
                    .until(() -> {
                        found.set(threadNamed(comm).orElse(null));
                        return found.get() != null;
                    });
        } catch (ConditionTimeoutException e) {
            throw new AssertionError("no thread named " + comm + " in /proc/self/task after 10 s: " + threadNames(), e);
        }
        return found.get();
    }

    private static Optional<Path> threadNamed(String comm) {
        return tasks().stream().filter(t -> comm.equals(commOf(t))).findFirst();
    }

    private static List<String> threadNames() {
        return tasks().stream().map(BulkPollingTest::commOf).toList();
    }

    private static List<Path> tasks() {
        try (Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
            return tasks.toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A thread's name, or "" when it ended while being listed. */
    private static String commOf(Path task) {
        try {
            return Files.readString(task.resolve("comm")).strip();
        } catch (IOException e) {
            return "";
        }
    }

    /** utime + stime of a thread, in clock ticks (fields 14 and 15 of its stat, after the name's ')'). */
    private static long cpuTicks(Path task) {
        String stat = read(task.resolve("stat"));
        String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
    }

    private static String read(Path file) {
        try {
            return Files.readString(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
