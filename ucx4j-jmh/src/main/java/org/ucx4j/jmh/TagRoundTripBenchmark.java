package org.ucx4j.jmh;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletableFuture;
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
 * The cost of one 8-byte tag message through ucx4j, in one process, both workers caller-driven by the
 * benchmark thread: post a receive, send, progress until the receive completes. UCX's own share is
 * what {@code ucx_perftest} shows for the same transport; the rest is the Java path (futures, the
 * operation table, the lock, the downcalls). With {@code -prof gc} JMH also reports bytes allocated per
 * message: the per-operation allocations the issue asks to measure.
 *
 * <p>Run: {@code bench/jmh.sh} (see docs/BENCHMARKS.md).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class TagRoundTripBenchmark {
    /** Whether endpoints detect peer failure (UCX then uses tcp only) or not (shared memory allowed). */
    @Param({"true", "false"})
    public boolean peerErrorHandling;

    private WorkerPair pair;
    private Arena arena;
    private MemorySegment out;
    private MemorySegment in;

    /** Connects the two caller-driven workers. */
    @Setup(Level.Trial)
    public void connect() throws Exception {
        pair = new WorkerPair(ProgressMode.CALLER, peerErrorHandling);
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

    /** One message: receive posted, send, progress both sides until the receive completes. */
    @Benchmark
    public long tagMessage() {
        UcxFuture<TagInfo> received = pair.server.tagRecvAsync(in, 1, -1L);
        UcxFuture<Void> sent = pair.endpoint.tagSendAsync(out, 1);
        while (!received.isDone() || !sent.isDone()) {
            pair.progressBoth();
        }
        return received.join().length();
    }

    /** The Java-side floor: a future and its completion, no UCX call. */
    @Benchmark
    public Object futureOnly() {
        CompletableFuture<Object> f = new CompletableFuture<>();
        f.complete(in);
        return f.join();
    }
}
