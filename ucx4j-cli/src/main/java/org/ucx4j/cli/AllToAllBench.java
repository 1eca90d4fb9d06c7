package org.ucx4j.cli;

import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.ucx4j.cluster.Cluster;
import org.ucx4j.cluster.ClusterMesh;
import org.ucx4j.comm.Comm;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.Frame;
import org.ucx4j.comm.FrameAllocator;
import org.ucx4j.comm.Message;

/**
 * {@code ucx4j bench --all-to-all}, run by every worker of {@code ucx4j launch}: Dask-CUDA's explicit-comms
 * shuffle pattern. Over each transport, the workers connect all-to-all ({@link ClusterMesh}); in each round
 * every worker sends one partition of {@code --size} bytes to every other worker and receives one from
 * each, all pairs at once, with up to {@code --window} partitions in flight per peer. Partitions live in the
 * benchmark's memory ({@code --memory cuda}: the worker's GPU, from a pool; received frames land in the
 * pool too).
 *
 * <p>Measured: each worker's time from a common barrier to its last byte sent and received; the aggregate
 * is every byte sent by every worker over the slowest worker's time. Rank 0 prints the result (a table or
 * {@code --json}) and progress lines on stderr; the warm-up round checks every received partition's bytes.
 *
 * <p>Threading: two virtual threads per peer (sender, receiver) during a run.
 */
final class AllToAllBench {
    private static final Duration READ_TIMEOUT = Duration.ofSeconds(300);
    private static final long PROGRESS_NANOS = 2_000_000_000L;

    private final BenchMemory memory;
    private final PrintStream out;
    private final PrintStream err;

    AllToAllBench(BenchMemory memory, PrintStream out, PrintStream err) {
        this.memory = memory;
        this.out = out;
        this.err = err;
    }

    /** Bytes each worker sends per transport when {@code --iters} is not given: host memory, or {@code tcp://}. */
    static final long DEFAULT_BYTES = 4L << 30;

    /**
     * The same over {@code ucx://} with device memory: GPU-to-GPU copies run at hundreds of GB/s, and 4 GiB
     * was a 0.2 s window in which the start (the barrier's skew, the first partitions) weighed ~10%.
     */
    static final long DEFAULT_DEVICE_BYTES = 640L << 30;

    /**
     * Rounds when {@code --iters} is not given: about {@code bytes} sent by each worker, 3..10,000.
     *
     * @param size the partition size
     * @param peers the other workers
     * @param bytes what each worker should send ({@link #DEFAULT_BYTES} or {@link #DEFAULT_DEVICE_BYTES})
     * @return the rounds
     */
    static long defaultRounds(long size, int peers, long bytes) {
        long perRound = Math.max(1, size) * Math.max(1, peers);
        return Math.max(3, Math.min(10_000, bytes / perRound));
    }

    /**
     * Runs the benchmark as this worker.
     *
     * @param transports the transports, in order
     * @param size partition size in bytes
     * @param rounds measured rounds, or null for {@link #defaultRounds} (per transport)
     * @param window partitions in flight per peer
     * @param json rank 0 prints JSON instead of a table
     * @return the exit code
     */
    int run(List<CommKind> transports, long size, Long rounds, int window, boolean json) {
        try (Cluster cluster = Cluster.join();
                Arena arena = Arena.ofShared()) {
            int peers = cluster.size() - 1;
            if (peers < 1) {
                err.println("bench --all-to-all needs two workers or more (ucx4j launch --workers 2, or on one GPU "
                        + "--gpus 0 --workers-per-gpu 2)");
                return Main.EXIT_USAGE;
            }
            MemorySegment partition = memory.allocate(arena, size);
            memory.fill(partition, cluster.rank());
            CommOptions options = memory.pool() == null
                    ? CommOptions.defaults()
                    : CommOptions.builder()
                            .allocator(FrameAllocator.host().with(memory.pool()))
                            .build();
            List<Map<String, Object>> results = new ArrayList<>();
            for (CommKind t : transports) {
                String label = t.scheme() + "://";
                boolean deviceOverUcx = t == CommKind.UCX && memory.pool() != null;
                long n = rounds != null
                        ? rounds
                        : defaultRounds(size, peers, deviceOverUcx ? DEFAULT_DEVICE_BYTES : DEFAULT_BYTES);
                try (ClusterMesh mesh = cluster.mesh(t.scheme() + "://127.0.0.1:0", options)) {
                    exchange(mesh, partition, 1, window, true, null);
                    cluster.barrier();
                    long start = System.nanoTime();
                    AtomicLong received = new AtomicLong();
                    Thread progress = cluster.rank() == 0 ? progress(label, received, n * peers) : null;
                    exchange(mesh, partition, n, window, false, received);
                    double seconds = (System.nanoTime() - start) / 1e9;
                    if (progress != null) {
                        progress.interrupt();
                    }
                    List<String> all = cluster.allGatherText(Double.toString(seconds));
                    results.add(result(label, cluster.size(), size, n, all));
                    cluster.barrier(); // every worker has read everything before the comms close
                }
            }
            if (cluster.rank() == 0) {
                print(results, json);
            }
            return 0;
        }
    }

    private void exchange(
            ClusterMesh mesh, MemorySegment partition, long rounds, int window, boolean verify, AtomicLong received) {
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int peer : mesh.peers()) {
            Comm comm = mesh.comm(peer);
            threads.add(Thread.ofVirtual().name("all-to-all-send-" + peer).start(() -> {
                try {
                    send(comm, partition, rounds, window);
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }));
            threads.add(Thread.ofVirtual().name("all-to-all-recv-" + peer).start(() -> {
                try {
                    for (long r = 0; r < rounds; r++) {
                        try (Message m = comm.read(READ_TIMEOUT)) {
                            if (m.frameCount() != 1 || m.frame(0).size() != partition.byteSize()) {
                                throw new IllegalStateException("rank " + peer + " sent " + m
                                        + ", expected one frame of " + partition.byteSize() + " bytes");
                            }
                            if (verify) {
                                memory.verify(m.frame(0).segment(), peer, "the partition from rank " + peer);
                            }
                        }
                        if (received != null) {
                            received.incrementAndGet();
                        }
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }));
        }
        for (Thread t : threads) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            }
        }
        if (failure.get() != null) {
            throw new IllegalStateException("all-to-all failed: " + failure.get(), failure.get());
        }
    }

    private void send(Comm comm, MemorySegment partition, long rounds, int window) throws InterruptedException {
        Semaphore inFlight = new Semaphore(window);
        AtomicReference<Throwable> failed = new AtomicReference<>();
        Frame frame = new Frame(partition, memory.kind());
        for (long r = 0; r < rounds && failed.get() == null; r++) {
            inFlight.acquire();
            comm.writeAsync(Message.of(frame)).whenComplete((v, e) -> {
                if (e != null) {
                    failed.compareAndSet(null, e);
                }
                inFlight.release();
            });
        }
        inFlight.acquire(window);
        if (failed.get() != null) {
            throw new IllegalStateException("a write failed: " + failed.get(), failed.get());
        }
    }

    private Thread progress(String label, AtomicLong received, long total) {
        long start = System.nanoTime();
        return Thread.ofPlatform().daemon(true).name("all-to-all-progress").start(() -> {
            try {
                while (true) {
                    Thread.sleep(PROGRESS_NANOS / 1_000_000); // a progress line every 2 s
                    long got = received.get();
                    err.printf(
                            Locale.ROOT,
                            "all-to-all %s: %d%% (%,d of %,d partitions received by rank 0, %.0f s)%n",
                            label,
                            got * 100 / Math.max(1, total),
                            got,
                            total,
                            (System.nanoTime() - start) / 1e9);
                }
            } catch (InterruptedException done) {
                // measured part over
            }
        });
    }

    private Map<String, Object> result(String label, int workers, long size, long rounds, List<String> seconds) {
        double slowest = 0;
        List<Double> perWorker = new ArrayList<>();
        long perWorkerBytes = size * rounds * (workers - 1);
        for (String s : seconds) {
            double t = Double.parseDouble(s);
            slowest = Math.max(slowest, t);
            perWorker.add(round1(perWorkerBytes / t / (1 << 20)));
        }
        double total = (double) perWorkerBytes * workers;
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("transport", label);
        m.put("memory", memory.kind().name().toLowerCase(Locale.ROOT));
        m.put("workers", workers);
        m.put("partition_bytes", size);
        m.put("rounds", rounds);
        m.put("bytes_total", (long) total);
        m.put("seconds", slowest);
        m.put("aggregate_mb_s", round1(total / slowest / (1 << 20)));
        m.put("aggregate_gb_s", Math.round(total / slowest / (1L << 30) * 1000) / 1000.0);
        m.put("worker_send_mb_s", perWorker);
        return m;
    }

    private static double round1(double v) {
        return Math.round(v * 10) / 10.0;
    }

    private void print(List<Map<String, Object>> results, boolean json) {
        if (json) {
            Map<String, Object> doc = new LinkedHashMap<>();
            doc.put("benchmark", "all-to-all");
            doc.put("units", "MB = 2^20 bytes, GB = 2^30 bytes");
            doc.put("results", results);
            out.println(Json.write(doc));
            return;
        }
        out.println(
                "all-to-all: every worker sends a partition to every other, all at once (MB = 2^20 bytes, GB = 2^30)");
        out.printf(
                Locale.ROOT,
                "%-9s %-6s %7s %10s %7s %14s %10s  %s%n",
                "transport",
                "memory",
                "workers",
                "partition",
                "rounds",
                "aggregate MB/s",
                "GB/s",
                "per worker sent MB/s");
        for (Map<String, Object> r : results) {
            out.printf(
                    Locale.ROOT,
                    "%-9s %-6s %7d %10s %7d %,14.1f %10.3f  %s%n",
                    r.get("transport"),
                    r.get("memory"),
                    (Integer) r.get("workers"),
                    DemoReport.sizeLabel((Long) r.get("partition_bytes")),
                    (Long) r.get("rounds"),
                    (Double) r.get("aggregate_mb_s"),
                    (Double) r.get("aggregate_gb_s"),
                    r.get("worker_send_mb_s"));
        }
    }
}
