package org.ucx4j.jmh;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URI;
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
import org.ucx4j.MemoryKind;
import org.ucx4j.ProgressMode;
import org.ucx4j.TagInfo;
import org.ucx4j.UcxFuture;
import org.ucx4j.comm.Comm;
import org.ucx4j.comm.CommContext;
import org.ucx4j.comm.CommListener;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.Frame;
import org.ucx4j.comm.Message;

/**
 * What the comm's framing costs per message, without threads: a {@code ucx://} round trip of one
 * host frame between a client comm and the comm its listener accepted, in this process, beside the
 * core's tag round trip of the same size between two workers. Everything runs in {@code caller}
 * progress mode on the benchmark thread (the fork sets {@code ucx4j.progress-mode=caller}), so the
 * difference between the two is the Java work of the comm (headers, the receive pipeline, message
 * scopes, futures, flow control), not a hand-off between threads. {@code -prof gc} gives the bytes
 * allocated per round trip.
 *
 * <p>The comm's two ends share the process's UCX worker (an endpoint to itself); the tag pair uses two
 * workers. With peer error handling off both use UCX's shared memory or self transports.
 *
 * <p>Run: {@code bench/jmh.sh CommRoundTrip -prof gc} (see docs/BENCHMARKS.md).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(
        value = 1,
        jvmArgsAppend = {
            "--enable-native-access=ALL-UNNAMED",
            "-Ducx4j.progress-mode=caller",
            "-Ducx4j.peer-error-handling=false"
        })
public class CommRoundTripBenchmark {
    /** Bytes of the one frame each way. */
    @Param({"1024"})
    public int size;

    /**
     * Whether the comm pair exists (false: only the tag benchmarks can run; a check whether the comm's
     * presence in the process changes the core's figures).
     */
    @Param({"true"})
    public boolean comm;

    private CommContext context;
    private CommListener listener;
    private Comm client;
    private Comm server;
    private Arena arena;
    private Message ping;
    private Message pong;
    private WorkerPair pair;
    private MemorySegment out;
    private MemorySegment in;

    /** Connects a comm pair and a worker pair; fills the frames. */
    @Setup(Level.Trial)
    public void connect() throws Exception {
        arena = Arena.ofShared();
        pair = new WorkerPair(ProgressMode.CALLER, false);
        out = arena.allocate(size, 64);
        in = arena.allocate(size, 64);
        if (!comm) {
            return;
        }
        context = CommContext.create();
        CompletableFuture<Comm> accepted = new CompletableFuture<>();
        listener = context.listen(URI.create("ucx://127.0.0.1:0"), accepted::complete, CommOptions.defaults());
        client = context.connect(listener.address(), CommOptions.defaults());
        server = accepted.get(30, TimeUnit.SECONDS);
        MemorySegment a = arena.allocate(size, 64).fill((byte) 1);
        MemorySegment b = arena.allocate(size, 64).fill((byte) 2);
        ping = Message.of(Frame.host(a));
        pong = Message.of(Frame.host(b));
    }

    /** Closes the comms, the listener, the context, the workers, then the frames' memory. */
    @TearDown(Level.Trial)
    public void close() {
        if (comm) {
            client.close();
            server.close();
            listener.close();
            context.close();
        }
        pair.close();
        arena.close();
    }

    /** One comm round trip: the client writes, the server reads and answers, the client reads. */
    @Benchmark
    public long commRoundTrip() {
        if (!comm) {
            throw new IllegalStateException("comm=false: no comm pair to measure");
        }
        client.write(ping);
        long n;
        try (Message m = server.read()) {
            n = m.byteSize();
        }
        server.write(pong);
        try (Message m = client.read()) {
            return n + m.byteSize();
        }
    }

    /**
     * {@link #tagRoundTrip} with the buffers declared host memory: UCX skips its memory-type detection
     * (which, where its GPU transports are loaded, asks the driver about each Java buffer).
     */
    @Benchmark
    public long tagRoundTripDeclared() {
        UcxFuture<TagInfo> there = pair.server.tagRecvAsync(in, MemoryKind.HOST, 1, -1L, pair.accepted);
        UcxFuture<Void> sent = pair.endpoint.tagSendAsync(out, MemoryKind.HOST, 1);
        while (!there.isDone() || !sent.isDone()) {
            pair.progressBoth();
        }
        UcxFuture<TagInfo> back = pair.client.tagRecvAsync(in, MemoryKind.HOST, 2, -1L, pair.endpoint);
        UcxFuture<Void> answered = pair.accepted.tagSendAsync(out, MemoryKind.HOST, 2);
        while (!back.isDone() || !answered.isDone()) {
            pair.progressBoth();
        }
        return there.join().length() + back.join().length();
    }

    /** One tag round trip of the same size between two workers, progressed by this thread. */
    @Benchmark
    public long tagRoundTrip() {
        UcxFuture<TagInfo> there = pair.server.tagRecvAsync(in, 1, -1L);
        UcxFuture<Void> sent = pair.endpoint.tagSendAsync(out, 1);
        while (!there.isDone() || !sent.isDone()) {
            pair.progressBoth();
        }
        UcxFuture<TagInfo> back = pair.client.tagRecvAsync(in, 2, -1L);
        UcxFuture<Void> answered = pair.accepted.tagSendAsync(out, 2);
        while (!back.isDone() || !answered.isDone()) {
            pair.progressBoth();
        }
        return there.join().length() + back.join().length();
    }
}
