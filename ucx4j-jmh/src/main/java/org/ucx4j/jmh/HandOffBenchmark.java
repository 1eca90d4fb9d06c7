package org.ucx4j.jmh;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.ucx4j.ProgressMode;
import org.ucx4j.TagInfo;
import org.ucx4j.UcxFuture;

/**
 * One 8-byte tag message between two workers that each have a progress thread (shared memory, peer error
 * handling off): the benchmark thread posts the receive and the send, then waits in
 * {@code UcxWorker.await}. What it adds to {@link TagHotPathBenchmark#tagMessage()} is the hand-off: the
 * submission reaching a progress thread, UCX's completion on it, the future completed there, and the
 * waiting thread seeing it (spin, or park and unpark).
 *
 * <p>Run: {@code bench/jmh.sh HandOffBenchmark -prof gc} (see docs/BENCHMARKS.md).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class HandOffBenchmark {
    /** The progress mode of both workers. */
    @Param({"THREAD_POLLING", "THREAD_BLOCKING"})
    public ProgressMode mode;

    private WorkerPair pair;
    private Arena arena;
    private MemorySegment out;
    private MemorySegment in;

    /** Connects the two threaded workers. */
    @Setup(Level.Trial)
    public void connect() throws Exception {
        pair = new WorkerPair(mode, false);
        arena = Arena.ofShared();
        out = arena.allocate(8);
        in = arena.allocate(8);
    }

    /** Closes the workers, then the buffers they used. */
    @TearDown(Level.Trial)
    public void close() {
        pair.close();
        arena.close();
    }

    /** Receive posted, send, wait for both in {@code await} (the progress threads complete them). */
    @Benchmark
    public long tagMessage() {
        UcxFuture<TagInfo> received = pair.server.tagRecvAsync(in, 1, -1L);
        UcxFuture<Void> sent = pair.endpoint.tagSendAsync(out, 1);
        pair.client.await(sent);
        return pair.server.await(received).length();
    }
}
