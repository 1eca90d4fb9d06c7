package org.ucx4j.cli;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.ucx4j.Feature;
import org.ucx4j.ProgressMode;
import org.ucx4j.RemoteKey;
import org.ucx4j.TagInfo;
import org.ucx4j.Ucx;
import org.ucx4j.UcxConfig;
import org.ucx4j.UcxEndpoint;
import org.ucx4j.UcxFuture;
import org.ucx4j.UcxWorker;

/**
 * The active side of {@code ucx4j bench}: connects, tells the server what to run, measures, says bye.
 *
 * <p>What is timed: latency, each round trip (two-sided: the ping sent and the pong received; put: the put
 * and an endpoint flush, which completes when the data is at the target; get: the get); bandwidth and
 * rate, the measured phase from the first operation to its completion (two-sided: the server's
 * acknowledgement that every message arrived; put: the flush after the last put; get: the last get).
 * Verification traffic after a one-sided phase is outside the timing.
 *
 * <p>Threading: one platform thread does everything with blocking waits; buffers are native
 * ({@code Arena.ofShared()}) so UCX uses them in place.
 */
final class BenchClient {
    private final ProgressMode progress;
    private final UcxConfig config;
    private final boolean progressBar;
    private final long warmupNanos;

    BenchClient(ProgressMode progress, UcxConfig config, boolean progressBar, long warmupNanos) {
        this.progress = progress;
        this.config = config;
        this.progressBar = progressBar;
        this.warmupNanos = warmupNanos;
    }

    /** What one run measured: its seconds, and for latency the samples. */
    private record Measured(double seconds, LatencyStats latency) {}

    /** The data path of one run: a message path, or an endpoint and the server region's key. */
    private record Target(UcxEndpoint ep, MessagePath path, RemoteKey key) {
        UcxWorker worker() {
            return ep.worker();
        }
    }

    /**
     * Connects to a server and runs one measurement.
     *
     * @param host the server's host
     * @param port the server's port
     * @param run what to measure
     * @return the result
     */
    BenchResult run(String host, int port, BenchSettings run) {
        try (UcxSession session = UcxSession.open(
                        "ucx4j-bench-client",
                        progress,
                        config,
                        EnumSet.of(Feature.TAG, run.op().feature()));
                Arena arena = Arena.ofShared()) {
            List<String> transports = session.context().transports();
            UcxEndpoint ep;
            try {
                ep = BenchRendezvous.connect(session.worker(), host, port);
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(
                        "cannot reach the bench server at " + host + ":" + port + ": " + e.getMessage(), e);
            }
            MessagePath path = run.op().oneSided() ? null : MessagePath.of(run.op(), ep);
            MemorySegment control = arena.allocate(BenchProtocol.CONTROL_SIZE, 8);
            // Unmeasured runs of the same shape first: see BenchSettings.DEFAULT_WARMUP_SECONDS.
            BenchSettings small = run.forWarmUp();
            BenchSettings.warmUp(warmupNanos, progressBar, () -> {
                try (ProgressBar silent = ProgressBar.start(small.total(), "warm-up", false)) {
                    measure(ep, path, control, small, silent);
                }
            });
            Measured m;
            try (ProgressBar bar =
                    ProgressBar.start(run.total(), run.perftestName() + " " + run.size() + " B", progressBar)) {
                m = measure(ep, path, control, run, bar);
            }
            sayBye(ep, control, arena);
            ep.close();
            return new BenchResult(run, progress, m.seconds(), m.latency(), Ucx.version(), transports);
        }
    }

    /**
     * One run on a connected endpoint: tells the server, waits for it to be ready, measures. The run's
     * buffers live in an arena of its own, so repeated warm-up runs do not pile them up.
     */
    private static Measured measure(
            UcxEndpoint ep, MessagePath path, MemorySegment control, BenchSettings run, ProgressBar bar) {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment ready = arena.allocate(BenchProtocol.MAX_READY_SIZE, 8);
            UcxFuture<TagInfo> readied =
                    ep.worker().tagRecvAsync(ready, BenchProtocol.READY, BenchProtocol.ALL_BITS, ep);
            BenchProtocol.writeControl(control, run);
            ep.tagSend(control, BenchProtocol.CONTROL);
            long readyLength =
                    ep.worker().await(readied, Duration.ofSeconds(60)).length();
            RemoteKey key = run.op().oneSided()
                    ? ep.unpackRemoteKey(ready.asSlice(0, readyLength).toArray(ValueLayout.JAVA_BYTE))
                    : null;
            Target target = new Target(ep, path, key);
            try {
                if (run.mode() == BenchMode.LATENCY) {
                    long[] samples = latency(target, run, arena, bar);
                    long total = 0;
                    for (long s : samples) {
                        total += s;
                    }
                    return new Measured(total / 1e9, new LatencyStats(samples));
                }
                return new Measured(bandwidth(target, run, arena, bar), null);
            } finally {
                if (key != null) {
                    key.close();
                }
            }
        }
    }

    /** Tells the server the session is over and waits for its answer, so that closing loses nothing. */
    private static void sayBye(UcxEndpoint ep, MemorySegment control, Arena arena) {
        MemorySegment ack = arena.allocate(1);
        UcxFuture<TagInfo> answered = ep.worker().tagRecvAsync(ack, BenchProtocol.ACK, BenchProtocol.ALL_BITS, ep);
        BenchProtocol.writeControl(control, null);
        ep.tagSend(control, BenchProtocol.CONTROL);
        ep.worker().await(answered, Duration.ofSeconds(30));
    }

    // ------------------------------------------------------------------ latency

    /**
     * Round trips, one sample each. Two-sided: tag messages on a caller-driven worker go by a blocking send
     * then a blocking receive, as {@code ucx_perftest} does; otherwise the receive is posted before the
     * send, so that the pong never waits as unexpected; the first and last pongs are verified. Put: the last put's pattern is checked
     * by the server at the end. Get: the first and last gets are verified.
     */
    private static long[] latency(Target t, BenchSettings run, Arena arena, ProgressBar bar) {
        UcxWorker worker = t.worker();
        BenchMemory memory = BenchMemory.current();
        MemorySegment send = memory.allocate(arena, run.size());
        MemorySegment recv = memory.allocate(arena, run.size());
        long[] samples = new long[Math.toIntExact(run.iterations())];
        long total = run.total();
        // Tag messages: the blocking calls, a send then a receive, as ucx_perftest does (they run without a
        // future in every progress mode: UcxWorker#tagRecv); the other paths keep the receive posted before
        // the send. On a threaded worker the blocking pair beat the futures (receive first) by 0.92x on an
        // H200 (docs/BENCHMARKS.md, "Blocking tag calls without a future on threaded workers").
        boolean sendThenReceive = t.path() != null && t.path().hasBlockingCalls();
        for (long i = 0; i < total; i++) {
            boolean verify = i == 0 || i == total - 1;
            if (verify) {
                memory.fill(send, i + 1);
                memory.zero(recv);
            }
            long t0 = System.nanoTime();
            switch (run.op()) {
                case PUT -> {
                    UcxFuture<Void> put = t.ep().putAsync(send, t.key(), 0);
                    worker.await(t.ep().flushAsync());
                    worker.await(put);
                }
                case GET -> worker.await(t.ep().getAsync(recv, t.key(), 0));
                default -> {
                    long length;
                    if (sendThenReceive) {
                        // As ucx_perftest's ping-pong: a blocking send, then a blocking receive (on a
                        // caller-driven worker both run without a future: UcxWorker#tagRecv).
                        t.path().sendNow(worker, send, MessagePath.Kind.PING);
                        length = t.path().recvNow(worker, recv, MessagePath.Kind.PONG);
                    } else {
                        // A progress thread runs both at once: the receive first, so the pong never waits
                        // as unexpected.
                        CompletableFuture<Long> pong = t.path().recv(recv, MessagePath.Kind.PONG);
                        CompletableFuture<?> ping = t.path().send(send, MessagePath.Kind.PING);
                        length = worker.await(pong);
                        worker.await(ping);
                    }
                    if (length != run.size()) {
                        throw new IllegalStateException(
                                "pong " + i + " has " + length + " bytes, expected " + run.size());
                    }
                }
            }
            long t1 = System.nanoTime();
            if (i >= run.warmup()) {
                samples[(int) (i - run.warmup())] = t1 - t0;
            }
            if (verify) {
                switch (run.op()) {
                    case PUT -> {} // checked by the server at the end
                    case GET -> memory.verify(recv, BenchServer.GET_SEED, "get " + i);
                    default -> memory.verify(recv, i + 1, "pong of round trip " + i);
                }
            }
            bar.step();
        }
        if (run.op().oneSided()) {
            endOneSidedPhase(t, arena, run.op() == BenchOp.PUT ? total : 0, "latency");
        }
        return samples;
    }

    // ------------------------------------------------------------------ bandwidth and rate

    /** Warm-up phase, then the measured phase; returns the measured phase's seconds. */
    private static double bandwidth(Target t, BenchSettings run, Arena arena, ProgressBar bar) {
        BenchMemory memory = BenchMemory.current();
        Buffers buffers = Buffers.allocate(memory, arena, run.size());
        if (run.op() != BenchOp.GET) {
            memory.fill(buffers.first(), Buffers.FIRST_SEED);
            memory.fill(buffers.last(), Buffers.LAST_SEED);
        }
        MemorySegment ack = arena.allocate(1);
        boolean verifyFirstInWarmup = run.warmup() > 0;
        if (run.warmup() > 0) {
            phase(t, run, buffers, ack, arena, run.warmup(), true, false, bar, "warm-up");
        }
        long t0 = System.nanoTime();
        long t1 = phase(t, run, buffers, ack, arena, run.iterations(), !verifyFirstInWarmup, true, bar, "measured");
        return (t1 - t0) / 1e9;
    }

    /**
     * One phase of {@code n} operations with a window in flight; returns {@link System#nanoTime()} when
     * its timed part ended.
     *
     * <p>Which buffers: two-sided and get, the first and last operations use buffers of their own
     * (verified by the server, or here after gets). Put: every put goes to the same remote bytes, so only
     * the last put of a phase can be checked: the warm-up ends with the "first" pattern, the measured phase
     * with the "last" one, and a fence before that put keeps earlier puts from landing after it.
     */
    private static long phase(
            Target t,
            BenchSettings run,
            Buffers buffers,
            MemorySegment ack,
            Arena arena,
            long n,
            boolean verifyFirst,
            boolean verifyLast,
            ProgressBar bar,
            String what) {
        UcxWorker worker = t.worker();
        BenchOp op = run.op();
        UcxFuture<TagInfo> acked = null;
        if (!op.oneSided()) {
            ack.set(ValueLayout.JAVA_BYTE, 0, (byte) 0);
            acked = t.ep().worker().tagRecvAsync(ack, BenchProtocol.ACK, BenchProtocol.ALL_BITS, t.ep());
        }
        if (op == BenchOp.GET) {
            BenchMemory.current().zero(buffers.first());
            BenchMemory.current().zero(buffers.last());
        }
        boolean warmup = "warm-up".equals(what);
        ArrayDeque<CompletableFuture<?>> inflight = new ArrayDeque<>();
        for (long k = 0; k < n; k++) {
            if (inflight.size() == run.window()) {
                worker.await(inflight.poll());
            }
            CompletableFuture<?> started =
                    switch (op) {
                        case PUT -> {
                            MemorySegment source = buffers.bulk();
                            if (k == n - 1) {
                                source = warmup ? buffers.first() : buffers.last();
                                worker.fence();
                            }
                            yield t.ep().putAsync(source, t.key(), 0);
                        }
                        case GET ->
                            t.ep().getAsync(
                                            buffers.receiving(BenchProtocol.slot(k, n, verifyFirst, verifyLast), k),
                                            t.key(),
                                            0);
                        default ->
                            t.path()
                                    .send(
                                            buffers.of(BenchProtocol.slot(k, n, verifyFirst, verifyLast)),
                                            MessagePath.Kind.DATA);
                    };
            inflight.add(started);
            bar.step();
        }
        while (!inflight.isEmpty()) {
            worker.await(inflight.poll());
        }
        switch (op) {
            case PUT -> {
                t.ep().flush();
                long end = System.nanoTime();
                endOneSidedPhase(t, arena, warmup ? Buffers.FIRST_SEED : Buffers.LAST_SEED, what);
                return end;
            }
            case GET -> {
                long end = System.nanoTime();
                if (verifyFirst) {
                    BenchMemory.current()
                            .verify(buffers.first(), BenchServer.GET_SEED, "first get of the " + what + " phase");
                }
                if (verifyLast) {
                    BenchMemory.current()
                            .verify(buffers.last(), BenchServer.GET_SEED, "last get of the " + what + " phase");
                }
                endOneSidedPhase(t, arena, 0, what);
                return end;
            }
            default -> {
                worker.await(acked);
                long end = System.nanoTime();
                // The server checks the first and last messages after the phase, then sends its verdict.
                ack.set(ValueLayout.JAVA_BYTE, 0, (byte) 0);
                t.ep().worker().tagRecv(ack, BenchProtocol.ACK, BenchProtocol.ALL_BITS, t.ep());
                if (ack.get(ValueLayout.JAVA_BYTE, 0) != 1) {
                    throw new IllegalStateException(
                            "the server found the " + what + " data corrupted (first or last message)");
                }
                return end;
            }
        }
    }

    /** Tells the server a one-sided phase ended (and which pattern its region must hold), waits for its verdict. */
    private static void endOneSidedPhase(Target t, Arena arena, long seed, String what) {
        MemorySegment msg = arena.allocate(8, 8);
        MemorySegment ack = arena.allocate(1);
        UcxFuture<TagInfo> acked = t.ep().worker().tagRecvAsync(ack, BenchProtocol.ACK, BenchProtocol.ALL_BITS, t.ep());
        BenchProtocol.writeSeed(msg, seed);
        t.ep().tagSend(msg, BenchProtocol.PHASE_END);
        t.worker().await(acked, Duration.ofSeconds(60));
        if (ack.get(ValueLayout.JAVA_BYTE, 0) != 1) {
            throw new IllegalStateException("the server's region does not hold the last put of the " + what + " phase");
        }
    }
}
