package org.ucx4j.cli;

import java.lang.foreign.Arena;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.ucx4j.comm.Comm;
import org.ucx4j.comm.Frame;
import org.ucx4j.comm.Message;

/**
 * The active side of {@code ucx4j bench --comm} (see {@link CommBenchProtocol}): one run on a connected
 * comm.
 *
 * <p>What is timed: latency, each round trip (the message written and its echo read); bandwidth, the
 * measured phase from the first write to the server's reply that it read every message. The frames are
 * native memory ({@code Arena.ofShared()}) filled with a pattern once; every message of a run sends the
 * same frames (they are only read), and the server checks the first and last message of each phase, the
 * client the first and last echo, outside the timing.
 *
 * <p>Threading: the calling thread does everything; the window's futures are joined, so the comm's
 * transport must progress on its own (UCX progress mode {@code thread-blocking} or
 * {@code thread-polling}, not {@code caller}).
 */
final class CommBenchClient {
    private CommBenchClient() {}

    /**
     * Runs one measurement.
     *
     * @param comm the comm to a {@link CommBenchServer}
     * @param kind its transport, for the result
     * @param run what to measure
     * @param bar counts each round trip or message written
     * @return the result
     */
    static CommBenchResult run(Comm comm, CommKind kind, CommBenchSettings run, ProgressBar bar) {
        comm.write(CommBenchProtocol.control(run));
        CommBenchProtocol.expectOk(comm.read(), "the run " + run);
        try (Arena arena = Arena.ofShared()) {
            List<Frame> frames = new ArrayList<>(run.frames());
            for (int i = 0; i < run.frames(); i++) {
                BenchMemory memory = BenchMemory.current();
                var segment = memory.allocate(arena, run.size());
                memory.fill(segment, CommBenchProtocol.seed(i));
                frames.add(new Frame(segment, memory.kind()));
            }
            Message message = Message.of(frames);
            if (run.mode() == BenchMode.LATENCY) {
                long[] samples = latency(comm, run, message, bar);
                LatencyStats stats = new LatencyStats(samples);
                long total = 0;
                for (long s : samples) {
                    total += s;
                }
                return new CommBenchResult(kind, run, total / 1e9, stats);
            }
            if (run.warmup() > 0) {
                phase(comm, run, message, run.warmup(), "warm-up", bar);
            }
            return new CommBenchResult(kind, run, phase(comm, run, message, run.iterations(), "measured", bar), null);
        }
    }

    /** Tells the server the session is over; the caller closes the comm next. */
    static void sayBye(Comm comm) {
        comm.write(CommBenchProtocol.control(null));
    }

    private static long[] latency(Comm comm, CommBenchSettings run, Message message, ProgressBar bar) {
        long[] samples = new long[Math.toIntExact(run.iterations())];
        long total = run.total();
        for (long i = 0; i < total; i++) {
            long t0 = System.nanoTime();
            comm.write(message);
            Message echo = comm.read();
            long t1 = System.nanoTime();
            try (echo) {
                if (i == 0 || i == total - 1) {
                    CommBenchProtocol.verify(echo, run, "echo of round trip " + i);
                } else {
                    CommBenchProtocol.checkShape(echo, run, "echo of round trip " + i);
                }
            }
            if (i >= run.warmup()) {
                samples[(int) (i - run.warmup())] = t1 - t0;
            }
            bar.step();
        }
        return samples;
    }

    /** One bandwidth phase of {@code n} messages, a window of them in flight; returns its seconds. */
    private static double phase(
            Comm comm, CommBenchSettings run, Message message, long n, String what, ProgressBar bar) {
        ArrayDeque<CompletableFuture<Void>> inflight = new ArrayDeque<>();
        long t0 = System.nanoTime();
        for (long k = 0; k < n; k++) {
            if (inflight.size() == run.window()) {
                inflight.poll().join();
            }
            inflight.add(comm.writeAsync(message));
            bar.step();
        }
        while (!inflight.isEmpty()) {
            inflight.poll().join();
        }
        CommBenchProtocol.expectOk(comm.read(), "the end of the " + what + " phase");
        long t1 = System.nanoTime();
        CommBenchProtocol.expectOk(comm.read(), "the data of the " + what + " phase");
        return (t1 - t0) / 1e9;
    }
}
