package org.ucx4j.cli;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.List;
import org.ucx4j.ProgressMode;
import org.ucx4j.TagInfo;
import org.ucx4j.Ucx;
import org.ucx4j.UcxConfig;
import org.ucx4j.UcxEndpoint;
import org.ucx4j.UcxFuture;
import org.ucx4j.UcxWorker;

/**
 * The active side of {@code ucx4j pingpong}: connects, tells the server what to run, measures, says bye.
 *
 * <p>Threading: one platform thread does everything with blocking waits; buffers are native
 * ({@code Arena.ofShared()}) so UCX uses them in place.
 */
final class PingPongClient {
    private final ProgressMode progress;
    private final UcxConfig config;
    private final boolean progressBar;

    PingPongClient(ProgressMode progress, UcxConfig config, boolean progressBar) {
        this.progress = progress;
        this.config = config;
        this.progressBar = progressBar;
    }

    /**
     * Connects to a server and runs one measurement.
     *
     * @param host the server's host
     * @param port the server's port
     * @param run what to measure
     * @return the result
     */
    PingPongResult run(String host, int port, PingPongSettings run) {
        try (UcxSession session = UcxSession.open("ucx4j-pingpong-client", progress, config);
             Arena arena = Arena.ofShared()) {
            List<String> transports = session.context().transports();
            UcxEndpoint ep = session.worker().connect(host, port);
            MemorySegment control = arena.allocate(PingPongProtocol.CONTROL_SIZE, 8);
            PingPongProtocol.writeControl(control, run);
            ep.tagSend(control, PingPongProtocol.CONTROL);
            double seconds;
            LatencyStats latency = null;
            try (ProgressBar bar = ProgressBar.start(run.total(), run.mode().perftestName() + " " + run.size() + " B",
                    progressBar)) {
                if (run.mode() == PingPongMode.LATENCY) {
                    long[] samples = latency(ep, run, arena, bar);
                    latency = new LatencyStats(samples);
                    long total = 0;
                    for (long s : samples) {
                        total += s;
                    }
                    seconds = total / 1e9;
                } else {
                    seconds = bandwidth(ep, run, arena, bar);
                }
            }
            sayBye(ep, control, arena);
            ep.close();
            return new PingPongResult(run, progress, seconds, latency, Ucx.version(), transports);
        }
    }

    /** Tells the server the session is over and waits for its answer, so that closing loses nothing. */
    private static void sayBye(UcxEndpoint ep, MemorySegment control, Arena arena) {
        MemorySegment ack = arena.allocate(1);
        UcxFuture<TagInfo> answered = ep.tagRecvAsync(ack, PingPongProtocol.ACK, PingPongProtocol.ALL_BITS);
        PingPongProtocol.writeControl(control, null);
        ep.tagSend(control, PingPongProtocol.CONTROL);
        ep.worker().await(answered, java.time.Duration.ofSeconds(30));
    }

    /** Round trips; the receive is posted before the send so the pong never waits as unexpected. */
    private static long[] latency(UcxEndpoint ep, PingPongSettings run, Arena arena, ProgressBar bar) {
        UcxWorker worker = ep.worker();
        MemorySegment send = arena.allocate(run.size(), 64);
        MemorySegment recv = arena.allocate(run.size(), 64);
        long[] samples = new long[Math.toIntExact(run.iterations())];
        long total = run.total();
        for (long i = 0; i < total; i++) {
            boolean verify = i == 0 || i == total - 1;
            if (verify) {
                PingPongProtocol.fill(send, i + 1);
                recv.fill((byte) 0);
            }
            long t0 = System.nanoTime();
            UcxFuture<TagInfo> pong = ep.tagRecvAsync(recv, PingPongProtocol.PONG, PingPongProtocol.ALL_BITS);
            UcxFuture<Void> ping = ep.tagSendAsync(send, PingPongProtocol.PING);
            TagInfo info = worker.await(pong);
            worker.await(ping);
            long t1 = System.nanoTime();
            if (i >= run.warmup()) {
                samples[(int) (i - run.warmup())] = t1 - t0;
            }
            long length = info.length();
            if (length != run.size()) {
                throw new IllegalStateException("pong " + i + " has " + length + " bytes, expected " + run.size());
            }
            if (verify) {
                PingPongProtocol.verify(recv, i + 1, "pong of round trip " + i);
            }
            bar.step();
        }
        return samples;
    }

    /** Warm-up phase, then the measured phase; returns the measured phase's seconds (through the ack). */
    private static double bandwidth(UcxEndpoint ep, PingPongSettings run, Arena arena, ProgressBar bar) {
        Buffers buffers = Buffers.allocate(arena, run.size());
        PingPongProtocol.fill(buffers.first(), Buffers.FIRST_SEED);
        PingPongProtocol.fill(buffers.last(), Buffers.LAST_SEED);
        MemorySegment ack = arena.allocate(1);
        boolean verifyFirstInWarmup = run.warmup() > 0;
        if (run.warmup() > 0) {
            phase(ep, run, buffers, ack, run.warmup(), true, false, bar, "warm-up");
        }
        long t0 = System.nanoTime();
        phase(ep, run, buffers, ack, run.iterations(), !verifyFirstInWarmup, true, bar, "measured");
        return (System.nanoTime() - t0) / 1e9;
    }

    private static void phase(UcxEndpoint ep, PingPongSettings run, Buffers buffers, MemorySegment ack, long n,
                              boolean verifyFirst, boolean verifyLast, ProgressBar bar, String what) {
        UcxWorker worker = ep.worker();
        ack.set(ValueLayout.JAVA_BYTE, 0, (byte) 0);
        UcxFuture<TagInfo> acked = ep.tagRecvAsync(ack, PingPongProtocol.ACK, PingPongProtocol.ALL_BITS);
        ArrayDeque<UcxFuture<Void>> inflight = new ArrayDeque<>();
        for (long k = 0; k < n; k++) {
            if (inflight.size() == run.window()) {
                worker.await(inflight.poll());
            }
            MemorySegment source = buffers.of(PingPongProtocol.slot(k, n, verifyFirst, verifyLast));
            inflight.add(ep.tagSendAsync(source, PingPongProtocol.DATA));
            bar.step();
        }
        while (!inflight.isEmpty()) {
            worker.await(inflight.poll());
        }
        worker.await(acked);
        if (ack.get(ValueLayout.JAVA_BYTE, 0) != 1) {
            throw new IllegalStateException("the server found the " + what + " data corrupted (first or last message)");
        }
    }
}
