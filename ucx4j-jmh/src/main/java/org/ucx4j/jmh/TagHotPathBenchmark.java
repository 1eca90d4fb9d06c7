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
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.ucx4j.AmSendMode;
import org.ucx4j.ProgressMode;
import org.ucx4j.TagInfo;
import org.ucx4j.UcxFuture;

/**
 * The caller-mode hot paths of the core, one process, shared memory (peer error handling off), the
 * benchmark thread driving both workers: one 8-byte tag message, a window of them (the message-rate
 * path, native and heap buffers), an 8-byte active message, an 8-byte stream message. Time is per
 * message; with {@code -prof gc} JMH reports the bytes allocated per message ({@code gc.alloc.rate.norm}).
 *
 * <p>Run: {@code bench/jmh.sh TagHotPathBenchmark -prof gc} (see docs/BENCHMARKS.md).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class TagHotPathBenchmark {
    /** Messages per invocation of the windowed benchmarks: ucx4j bench's rate window is 128. */
    static final int WINDOW = 64;

    private static final int AM_ID = 7;

    private WorkerPair pair;
    private Arena arena;
    private MemorySegment out;
    private MemorySegment in;
    private MemorySegment in8;
    private MemorySegment header;
    private byte[] heapOut;
    private byte[] heapIn;
    private final UcxFuture<?>[] window = new UcxFuture<?>[2 * WINDOW];
    private long amReceived;

    /** Connects the two caller-driven workers and registers the active-message handler. */
    @Setup(Level.Trial)
    public void connect() throws Exception {
        pair = new WorkerPair(ProgressMode.CALLER, false);
        arena = Arena.ofShared();
        out = arena.allocate(8);
        in = arena.allocate(8 * WINDOW);
        in8 = in.asSlice(0, 8);
        header = arena.allocate(8);
        heapOut = new byte[8];
        heapIn = new byte[8 * WINDOW];
        pair.server.setAmHandler(AM_ID, m -> amReceived++);
    }

    /** Closes the workers, then the buffers they used. */
    @TearDown(Level.Trial)
    public void close() {
        pair.close();
        arena.close();
    }

    /** One tag message: receive posted, send, progress both sides until both complete. */
    @Benchmark
    public long tagMessage() {
        UcxFuture<TagInfo> received = pair.server.tagRecvAsync(in.asSlice(0, 8), 1, -1L);
        UcxFuture<Void> sent = pair.endpoint.tagSendAsync(out, 1);
        while (!received.isDone() || !sent.isDone()) {
            pair.progressBoth();
        }
        return received.join().length();
    }

    /**
     * One tag message through the blocking calls, which on a caller-driven worker run without a future or
     * a UCX callback: the send (done at once for 8 bytes over shared memory), then the receive, which
     * progresses the server until the message is matched. {@link RawFloorBenchmark} is the same message
     * with UCX's calls made directly.
     */
    @Benchmark
    public long tagMessageBlocking() {
        pair.endpoint.tagSend(out, 1);
        return pair.server.tagRecv(in8, 1, -1L).length();
    }

    /**
     * The message-rate path: {@value #WINDOW} receives posted, {@value #WINDOW} sends, progress until all
     * complete; time per message.
     */
    @Benchmark
    @OperationsPerInvocation(WINDOW)
    public int tagWindow() {
        for (int i = 0; i < WINDOW; i++) {
            window[i] = pair.server.tagRecvAsync(in.asSlice(8L * i, 8), 2, -1L);
        }
        for (int i = 0; i < WINDOW; i++) {
            window[WINDOW + i] = pair.endpoint.tagSendAsync(out, 2);
        }
        return drainWindow();
    }

    /** As {@link #tagWindow()} from and into {@code byte[]}: the staging copies of heap memory. */
    @Benchmark
    @OperationsPerInvocation(WINDOW)
    public int tagWindowHeap() {
        for (int i = 0; i < WINDOW; i++) {
            window[i] = pair.server.tagRecvAsync(MemorySegment.ofArray(heapIn).asSlice(8L * i, 8), 3, -1L);
        }
        for (int i = 0; i < WINDOW; i++) {
            window[WINDOW + i] = pair.endpoint.tagSendAsync(heapOut, 3);
        }
        return drainWindow();
    }

    private int drainWindow() {
        int done = 0;
        for (UcxFuture<?> f : window) {
            pair.progressUntil(f);
            done++;
        }
        return done;
    }

    /** One active message (8-byte header, 8-byte body, eager): send, progress until the handler ran. */
    @Benchmark
    public long amMessage() {
        long before = amReceived;
        UcxFuture<Void> sent = pair.endpoint.amSendAsync(AM_ID, header, out, AmSendMode.EAGER);
        while (amReceived == before || !sent.isDone()) {
            pair.progressBoth();
        }
        return amReceived;
    }

    /** One 8-byte stream message: receive posted, send, progress until both complete. */
    @Benchmark
    public long streamMessage() {
        UcxFuture<Long> received = pair.accepted.streamRecvAsync(in.asSlice(0, 8));
        UcxFuture<Void> sent = pair.endpoint.streamSendAsync(out);
        while (!received.isDone() || !sent.isDone()) {
            pair.progressBoth();
        }
        return received.join();
    }
}
