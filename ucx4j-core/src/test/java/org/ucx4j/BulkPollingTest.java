package org.ucx4j;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.ucx4j.testsupport.Requirements;

/**
 * A thread-blocking worker polls for a while after progress when an operation of 64 KiB or more is in
 * flight (GPU copies complete without a prompt event), and the polling is bounded: a large receive that
 * waits for a message that does not come leaves the progress thread asleep, not spinning.
 */
@Tag("native")
class BulkPollingTest {
    /** The window over which the progress thread's CPU time is measured. */
    private static final Duration WINDOW = Duration.ofSeconds(2);
    /** Linux's clock ticks per second, the unit of {@code utime} and {@code stime} in /proc. */
    private static final long TICKS_PER_SECOND = 100;

    @Test
    void aWaitingBulkReceiveLeavesTheProgressThreadAsleep() {
        Requirements.assumeUcx();
        try (UcxContext ctx = UcxContext.create();
                UcxWorker worker =
                        ctx.newWorker(WorkerOptions.builder().name("bp").build());
                Arena arena = Arena.ofShared()) {
            // The JVM names native threads after Java threads (cut to 15 characters on Linux).
            String threadName = worker.name() + "-progress";
            Path task = progressTask(threadName.substring(0, Math.min(15, threadName.length())));
            UcxFuture<TagInfo> pending = worker.tagRecvAsync(arena.allocate(1 << 20), 0x5eed, -1L);

            long ticks0 = cpuTicks(task);
            long wall0 = System.nanoTime();
            await().pollDelay(WINDOW).atMost(WINDOW.plusSeconds(30)).until(() -> true);
            long cpuMillis = (cpuTicks(task) - ticks0) * 1000 / TICKS_PER_SECOND;
            long wallMillis = (System.nanoTime() - wall0) / 1_000_000;

            assertTrue(
                    cpuMillis < wallMillis / 4,
                    "the progress thread used " + cpuMillis + " ms of CPU in " + wallMillis
                            + " ms with only a waiting 1 MiB receive in flight: it should sleep");
            assertFalse(pending.isDone(), "nothing was sent, so the receive is still waiting");
            pending.cancel(true);
            boolean failed = worker.await(pending.handle((v, e) -> e != null), Duration.ofSeconds(30));
            assertTrue(failed, "the canceled receive fails");
        }
    }

    /** The /proc folder of this process's thread named {@code comm}. */
    private static Path progressTask(String comm) {
        try (Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
            List<Path> all = tasks.toList();
            return all.stream()
                    .filter(t -> comm.equals(read(t.resolve("comm")).strip()))
                    .findFirst()
                    .orElseThrow(() -> new AssertionError("no thread named " + comm + " in /proc/self/task: "
                            + all.stream()
                                    .map(t -> read(t.resolve("comm")).strip())
                                    .toList()));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
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
