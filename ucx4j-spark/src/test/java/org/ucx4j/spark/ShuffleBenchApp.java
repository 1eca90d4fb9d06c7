package org.ucx4j.spark;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorAdded;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.StageInfo;
import scala.Tuple2;

/**
 * A shuffle-heavy Spark application, submitted with {@code spark-submit} (or {@code SparkSubmit}) by
 * bench/spark-shuffle.sh and by {@code PluginJarIT}: a sort and a group-by over generated records of
 * 100-byte values, about {@code --size-mb} MB of them. It prints one JSON line: the shuffle manager, bytes
 * written to the shuffle, bytes Spark read remotely, bytes our client fetched through ucx4j (0 with Spark's
 * own shuffle), job seconds, fetch wait seconds, a digest of the results (so that two runs with
 * different shuffles can be compared) and a timeline: when executors joined, and per stage its times and its
 * tasks' summed metrics ({@link Metrics#timeline()}). It depends on nothing but Spark and, when it is the
 * shuffle manager, ucx4j-spark.
 */
public final class ShuffleBenchApp {
    private ShuffleBenchApp() {}

    /**
     * Runs the jobs.
     *
     * @param args {@code [--size-mb N] [--partitions N] [--label text]}
     * @throws Exception when a job fails or the listener bus does not drain
     */
    public static void main(String[] args) throws Exception {
        long sizeMb = 64;
        int partitions = 8;
        String label = "";
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--size-mb" -> sizeMb = Long.parseLong(args[i + 1]);
                case "--partitions" -> partitions = Integer.parseInt(args[i + 1]);
                case "--label" -> label = args[i + 1];
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        long records = sizeMb * 1_000_000L / 110;
        Metrics metrics = new Metrics();
        try (JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("ucx4j shuffle bench"))) {
            metrics.startMillis = System.currentTimeMillis();
            sc.sc().addSparkListener(metrics);
            long start = System.nanoTime();
            String sort = sort(sc, records, partitions);
            String group = groupBy(sc, records, partitions);
            double seconds = (System.nanoTime() - start) / 1e9;
            sc.sc().listenerBus().waitUntilEmpty();
            String manager = SparkEnv.get().shuffleManager().getClass().getName();
            boolean ours = manager.equals("org.ucx4j.spark.UcxShuffleManager");
            long viaUcx4j = ours ? ucx4jBytesFetched(metrics.remoteBytesRead.get()) : 0;
            System.out.printf(
                    Locale.ROOT,
                    "{\"label\":\"%s\",\"shuffleManager\":\"%s\",\"transport\":\"%s\",\"records\":%d,"
                            + "\"bytesShuffled\":%d,\"remoteBytesRead\":%d,\"bytesFetchedViaUcx4j\":%d,"
                            + "\"jobSeconds\":%.3f,\"fetchWaitSeconds\":%.3f,\"result\":\"%s %s\",\"timeline\":%s}%n",
                    label,
                    manager,
                    ours ? sc.getConf().get("spark.ucx4j.transport", "ucx") : "netty",
                    records,
                    metrics.bytesWritten.get(),
                    metrics.remoteBytesRead.get(),
                    viaUcx4j,
                    seconds,
                    metrics.fetchWaitMs.get() / 1e3,
                    sort,
                    group,
                    metrics.timeline());
        }
    }

    /** The driver's count, once the executors' asynchronous reports have caught up with Spark's (10 s at most). */
    private static long ucx4jBytesFetched(long sparkRemoteBytes) {
        UcxShuffleManager manager = (UcxShuffleManager) SparkEnv.get().shuffleManager();
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (manager.remoteBytesFetched() < sparkRemoteBytes && System.nanoTime() < deadline) {
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        return manager.remoteBytesFetched();
    }

    private static JavaPairRDD<Long, byte[]> records(JavaSparkContext sc, long records, int partitions, long keys) {
        List<Integer> seeds = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            seeds.add(p);
        }
        return sc.parallelize(seeds, partitions).flatMapToPair(p -> {
            SplittableRandom random = new SplittableRandom(42 + p);
            long n = records / partitions + (p < records % partitions ? 1 : 0);
            List<Tuple2<Long, byte[]>> out = new ArrayList<>((int) n);
            for (long i = 0; i < n; i++) {
                byte[] value = new byte[100];
                random.nextBytes(value);
                long key = random.nextLong();
                out.add(new Tuple2<>(keys > 0 ? Math.floorMod(key, keys) : key, value));
            }
            return out.iterator();
        });
    }

    /** Sorts by key; the digest is the count and a hash over keys and values in order. */
    private static String sort(JavaSparkContext sc, long records, int partitions) {
        List<long[]> parts = records(sc, records, partitions, 0)
                .sortByKey(true, partitions)
                .mapPartitions(it -> {
                    long n = 0, hash = 17;
                    while (it.hasNext()) {
                        Tuple2<Long, byte[]> t = it.next();
                        hash = hash * 31 + t._1() + java.util.Arrays.hashCode(t._2());
                        n++;
                    }
                    return List.of(new long[] {n, hash}).iterator();
                })
                .collect();
        long n = 0, hash = 1;
        for (long[] part : parts) {
            n += part[0];
            hash = hash * 1_000_003 + part[1];
        }
        return "sort:" + n + ":" + Long.toHexString(hash);
    }

    /** Groups 100-byte values under 10,000 keys; the digest is over each group's size and value sum. */
    private static String groupBy(JavaSparkContext sc, long records, int partitions) {
        List<Tuple2<Long, Long>> groups = records(sc, records, partitions, 10_000)
                .groupByKey(partitions)
                .mapValues(values -> {
                    long n = 0, sum = 0;
                    for (byte[] v : values) {
                        n++;
                        sum += java.util.Arrays.hashCode(v);
                    }
                    return n * 1_000_003 + sum;
                })
                .collect();
        long hash = 0;
        for (Tuple2<Long, Long> g : groups) {
            hash += g._1() * 31 + g._2();
        }
        return "group-by:" + groups.size() + ":" + Long.toHexString(hash);
    }

    /** Adds up the shuffle metrics of every task. */
    static final class Metrics extends SparkListener {
        final AtomicLong bytesWritten = new AtomicLong();
        final AtomicLong remoteBytesRead = new AtomicLong();
        final AtomicLong fetchWaitMs = new AtomicLong();
        /** When the jobs started (epoch ms): set before the listener is added. */
        volatile long startMillis;

        private final List<String> executors = new ArrayList<>();
        private final List<String> stages = new ArrayList<>();
        /**
         * Per stage id: {@code [tasks, run ms, deserialisation ms, first launch (epoch ms), CPU ms, GC ms,
         * fetch wait ms]}, the times summed over the stage's tasks.
         */
        private final Map<Integer, long[]> tasks = new HashMap<>();

        /** A stage's sums before its first task ended (no launch yet: the largest time). */
        private static long[] noTasks() {
            return new long[] {0, 0, 0, Long.MAX_VALUE, 0, 0, 0};
        }

        @Override
        public synchronized void onExecutorAdded(SparkListenerExecutorAdded added) {
            executors.add("\"" + added.executorId() + "@" + (added.time() - startMillis) + "\"");
        }

        @Override
        public synchronized void onStageCompleted(SparkListenerStageCompleted completed) {
            StageInfo info = completed.stageInfo();
            long[] t = tasks.getOrDefault(info.stageId(), noTasks());
            long submitted = info.submissionTime().isDefined()
                    ? (Long) info.submissionTime().get()
                    : -1;
            long done = info.completionTime().isDefined()
                    ? (Long) info.completionTime().get()
                    : -1;
            stages.add(String.format(
                    Locale.ROOT,
                    "[%d,%d,%d,%d,%d,%d,%d,%d,%d,%d]",
                    info.stageId(),
                    submitted - startMillis,
                    done - startMillis,
                    t[3] == Long.MAX_VALUE ? -1 : t[3] - startMillis,
                    t[0],
                    t[1],
                    t[2],
                    t[4],
                    t[5],
                    t[6]));
        }

        /**
         * Where the job's time went, as JSON: executors added ("id@ms") and stages as {@code [id, submitted,
         * completed, first task launched (ms after the jobs started), tasks, their run ms, their
         * deserialisation ms, their CPU ms, their GC ms, their fetch wait ms]}.
         */
        synchronized String timeline() {
            return "{\"executors\":" + executors + ",\"stages\":" + stages + "}";
        }

        @Override
        public synchronized void onTaskEnd(SparkListenerTaskEnd end) {
            long[] t = tasks.computeIfAbsent(end.stageId(), id -> noTasks());
            t[0]++;
            t[3] = Math.min(t[3], end.taskInfo().launchTime());
            if (end.taskMetrics() != null) {
                t[1] += end.taskMetrics().executorRunTime();
                t[2] += end.taskMetrics().executorDeserializeTime();
                t[4] += end.taskMetrics().executorCpuTime() / 1_000_000;
                t[5] += end.taskMetrics().jvmGCTime();
                t[6] += end.taskMetrics().shuffleReadMetrics().fetchWaitTime();
                bytesWritten.addAndGet(end.taskMetrics().shuffleWriteMetrics().bytesWritten());
                remoteBytesRead.addAndGet(end.taskMetrics().shuffleReadMetrics().remoteBytesRead());
                fetchWaitMs.addAndGet(end.taskMetrics().shuffleReadMetrics().fetchWaitTime());
            }
        }
    }
}
