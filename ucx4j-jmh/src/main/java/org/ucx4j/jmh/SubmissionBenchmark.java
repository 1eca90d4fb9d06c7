package org.ucx4j.jmh;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Group;
import org.openjdk.jmh.annotations.GroupThreads;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.ucx4j.ProgressMode;
import org.ucx4j.UcxFuture;

/**
 * The submission path of an 8-byte tag message (receive and send posted) on caller-driven workers over
 * shared memory, with the progress lock free and with it contended:
 *
 * <ul>
 *   <li>{@code inline}: one thread submits and, when its ring of in-flight messages is full, progresses
 *       both workers itself; every submission finds the lock free and calls UCX inline.
 *   <li>{@code contended}: one thread submits while a second progresses both workers without pause, so
 *       submissions often find the lock held and go through the queue. The {@code submit} score is the
 *       one to read ({@code progress} is rounds of the other thread).
 * </ul>
 *
 * <p>Run: {@code bench/jmh.sh SubmissionBenchmark -prof gc} (see docs/BENCHMARKS.md).
 */
@State(Scope.Group)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class SubmissionBenchmark {
    private static final int RING = 64;
    /** After this long without the other thread completing a slot, the submitter progresses itself. */
    private static final long HELP_AFTER_NANOS = 1_000_000;

    private WorkerPair pair;
    private Arena arena;
    private MemorySegment out;
    private MemorySegment in;
    private final UcxFuture<?>[] ring = new UcxFuture<?>[2 * RING];
    private int next;

    /** Connects the two caller-driven workers. */
    @Setup(Level.Trial)
    public void connect() throws Exception {
        pair = new WorkerPair(ProgressMode.CALLER, false);
        arena = Arena.ofShared();
        out = arena.allocate(8);
        in = arena.allocate(8L * RING);
    }

    /** Lets the last messages complete, then closes the workers and the buffers they used. */
    @TearDown(Level.Trial)
    public void close() {
        for (UcxFuture<?> f : ring) {
            if (f != null) {
                pair.progressUntil(f);
            }
        }
        pair.close();
        arena.close();
    }

    /** Submits one message; the slot's earlier message is first completed by this thread's progress. */
    @Benchmark
    @Group("inline")
    @GroupThreads(1)
    public UcxFuture<?> submit() {
        int slot = next;
        next = (slot + 1) % RING;
        if (ring[2 * slot] != null) {
            pair.progressUntil(ring[2 * slot]);
            pair.progressUntil(ring[2 * slot + 1]);
        }
        return post(slot);
    }

    /**
     * Submits one message; the slot's earlier message is completed by the other thread's progress (or,
     * when that thread has stopped at the end of an iteration and the ring is full, by this one).
     */
    @Benchmark
    @Group("contended")
    @GroupThreads(1)
    public UcxFuture<?> submitContended() {
        int slot = next;
        next = (slot + 1) % RING;
        if (ring[2 * slot] != null) {
            long deadline = System.nanoTime() + HELP_AFTER_NANOS;
            while (!ring[2 * slot].isDone() || !ring[2 * slot + 1].isDone()) {
                if (System.nanoTime() > deadline) {
                    pair.progressBoth();
                } else {
                    Thread.onSpinWait();
                }
            }
        }
        return post(slot);
    }

    /** The other thread of {@code contended}: progress rounds on both workers, back to back. */
    @Benchmark
    @Group("contended")
    @GroupThreads(1)
    public int progress() {
        return pair.client.progress() + pair.server.progress();
    }

    private UcxFuture<?> post(int slot) {
        ring[2 * slot] = pair.server.tagRecvAsync(in.asSlice(8L * slot, 8), 1, -1L);
        UcxFuture<Void> sent = pair.endpoint.tagSendAsync(out, 1);
        ring[2 * slot + 1] = sent;
        return sent;
    }
}
