package org.ucx4j.spark;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.spark.HashPartitioner;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.ucx4j.testsupport.Requirements;

/**
 * An executor killed with {@code kill -9} in the middle of the reduce stage: the reducer's next fetch
 * from it fails over ucx4j, Spark sees a {@code FetchFailed}, re-runs the lost map output and the job
 * returns the right result.
 *
 * <p>How the kill lands mid-reduce: fetches are limited to one block in flight per executor, so a reduce
 * task holds most of its remote blocks still unfetched when it reads its first record; the first attempt
 * of reduce partition 0 then writes its executor id to a file and waits for the test, which kills the
 * other executor and lets the task go on. Afterwards the driver's registry no longer lists the killed
 * executor.
 */
@Tag("spark")
@Tag("native")
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class ExecutorKilledTest {
    private static final int RECORDS = 40_000;

    @Test
    void jobFinishesRightAfterAPeerIsKilled(@TempDir Path dir) throws Exception {
        Requirements.assumeUcx();
        Path started = dir.resolve("started");
        Path go = dir.resolve("go");
        String startedFile = started.toString();
        String goFile = go.toString();
        LocalClusters.ShuffleReadListener reads = new LocalClusters.ShuffleReadListener();
        try (JavaSparkContext sc = new JavaSparkContext(LocalClusters.ucx4j("ucx", "kill-9")
                // Map tasks only once both executors are up: with one alone, it may run every map task, the
                // other holds no output, and its kill fails no fetch (seen once in CI).
                .set("spark.scheduler.minRegisteredResourcesRatio", "1.0")
                .set("spark.reducer.maxBlocksInFlightPerAddress", "1")
                .set("spark.reducer.maxSizeInFlight", "1k")
                .set("spark.shuffle.io.maxRetries", "1")
                .set("spark.shuffle.io.retryWait", "1s"))) {
            sc.sc().addSparkListener(reads);
            CompletableFuture<List<String>> job = CompletableFuture.supplyAsync(() -> ShuffleJobs.pairs(
                            sc, RECORDS, 101)
                    .partitionBy(new HashPartitioner(2))
                    .mapPartitionsWithIndex(
                            (index, it) -> {
                                long n = 0, sum = 0;
                                TaskContext task = TaskContext.get();
                                boolean pause =
                                        index == 0 && task.stageAttemptNumber() == 0 && task.attemptNumber() == 0;
                                while (it.hasNext()) {
                                    sum += it.next()._2();
                                    if (n++ == 0 && pause) {
                                        Files.writeString(
                                                Path.of(startedFile),
                                                SparkEnv.get().executorId());
                                        await("the test kills the other executor")
                                                .atMost(Duration.ofSeconds(90))
                                                .until(() -> Files.exists(Path.of(goFile)));
                                    }
                                }
                                return List.of(index + ":" + n + "/" + sum).iterator();
                            },
                            true)
                    .collect());
            await("reduce partition 0 has read its first record")
                    .atMost(Duration.ofSeconds(120))
                    .until(() ->
                            Files.exists(started) && !Files.readString(started).isEmpty());
            String reducer = Files.readString(started);
            String victimId = reducer.equals("0") ? "1" : "0";
            ProcessHandle victim = executorProcess(victimId)
                    .orElseThrow(() -> new AssertionError("no process for executor " + victimId));
            assertTrue(victim.destroyForcibly(), "kill -9 of executor " + victimId);
            await("executor " + victimId + " is dead")
                    .atMost(Duration.ofSeconds(30))
                    .until(() -> !victim.isAlive());
            Files.writeString(go, "go");
            List<String> sums = job.get(4, TimeUnit.MINUTES);
            assertEquals(expected(), sums);
            await("the driver's registry forgets the killed executor")
                    .atMost(Duration.ofSeconds(60))
                    .until(() ->
                            !LocalClusters.driverManager().executorAddresses().containsKey(victimId));
        } finally {
            Files.deleteIfExists(go);
        }
        assertFalse(reads.fetchFailures.isEmpty(), "no FetchFailed: the kill did not land mid-reduce");
    }

    private static List<String> expected() {
        long[] n = new long[2];
        long[] sum = new long[2];
        for (long p = 0; p < ShuffleJobs.MAP_PARTITIONS; p++) {
            for (long i = p; i < RECORDS; i += ShuffleJobs.MAP_PARTITIONS) {
                long key = (i * 7919L) % 101;
                int part = new HashPartitioner(2).getPartition(key);
                n[part]++;
                sum[part] += i;
            }
        }
        return List.of("0:" + n[0] + "/" + sum[0], "1:" + n[1] + "/" + sum[1]);
    }

    /** The executor JVM started by this test's local-cluster (its command line, from /proc, names it). */
    static Optional<ProcessHandle> executorProcess(String executorId) {
        return ProcessHandle.current()
                .descendants()
                .filter(p -> {
                    List<String> args = commandLine(p);
                    int at = args.indexOf("--executor-id");
                    return at >= 0 && at + 1 < args.size() && args.get(at + 1).equals(executorId);
                })
                .findFirst();
    }

    private static List<String> commandLine(ProcessHandle p) {
        // ProcessHandle.Info leaves out arguments of long command lines; /proc has them all.
        try {
            return List.of(
                    Files.readString(Path.of("/proc/" + p.pid() + "/cmdline")).split("\u0000"));
        } catch (IOException e) {
            return List.of();
        }
    }
}
