package org.ucx4j.spark;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.spark.HashPartitioner;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import scala.Tuple2;

/**
 * The driver's registry of executors' shuffle servers follows Spark's executors: executors register when
 * they start, before any task (so that reducers find executors that never ran a shuffle task); an
 * executor killed with {@code kill -9} is forgotten, and a lookup of it says it was removed (the fetcher
 * then fails its blocks at once, with Spark's {@code FetchFailed}, instead of retrying a dead address);
 * the executor Spark starts in its place registers on its own, and jobs still shuffle through it. No other
 * sender can register an address for an executor that registered, or for an id Spark does not hold.
 */
@Tag("spark")
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class ExecutorRegistryTest {
    @Test
    void executorsRegisterAtStartAndRemovedOnesAreForgotten() throws Exception {
        LocalClusters.ShuffleReadListener reads = new LocalClusters.ShuffleReadListener();
        try (JavaSparkContext sc = new JavaSparkContext(LocalClusters.ucx4j("tcp", "registry"))) {
            sc.sc().addSparkListener(reads);
            UcxShuffleManager manager = LocalClusters.driverManager();
            await("both executors register before any job")
                    .atMost(Duration.ofMinutes(2))
                    .until(() -> manager.executorAddresses().size() == 2);
            assertEquals(0, reads.remoteBytesRead.get(), "no job ran");

            // Whoever reaches the driver's RPC cannot speak for an executor: no second address for one that
            // registered, no address for an id Spark's scheduler does not hold; the same address again is fine.
            ExecutorAddressRegistry.Client stranger = new ExecutorAddressRegistry.Client(
                    sc.getConf(), SparkEnv.get().rpcEnv());
            String someone = manager.executorAddresses().keySet().iterator().next();
            URI theirs = manager.executorAddresses().get(someone);
            URI elsewhere = URI.create("tcp://127.0.0.1:9");
            Exception hijack = assertThrows(Exception.class, () -> stranger.register(someone, elsewhere));
            assertTrue(
                    messages(hijack).contains("executor " + someone + " registered its ucx4j shuffle address already"),
                    messages(hijack));
            assertEquals(theirs, manager.executorAddresses().get(someone), "the executor's own address stays");
            Exception unknown = assertThrows(Exception.class, () -> stranger.register("4242", elsewhere));
            assertTrue(messages(unknown).contains("executor 4242 is not one of Spark's executors"), messages(unknown));
            assertFalse(manager.executorAddresses().containsKey("4242"));
            stranger.register(someone, theirs);

            String victim = manager.executorAddresses().keySet().iterator().next();
            ProcessHandle process = ExecutorKilledTest.executorProcess(victim)
                    .orElseThrow(() -> new AssertionError("no process for executor " + victim));
            assertTrue(process.destroyForcibly(), "kill -9 of executor " + victim);
            await("the registry forgets executor " + victim)
                    .atMost(Duration.ofMinutes(1))
                    .until(() -> !manager.executorAddresses().containsKey(victim));
            ExecutorAddressRegistry.Client lookups = new ExecutorAddressRegistry.Client(
                    sc.getConf(), SparkEnv.get().rpcEnv());
            IllegalStateException gone =
                    assertThrows(ExecutorAddressRegistry.ExecutorRemovedException.class, () -> lookups.lookup(victim));
            assertTrue(gone.getMessage().contains("executor " + victim + " was removed"), gone.getMessage());

            // Spark's master starts another executor, which registers without having run anything.
            await("the executor started in its place registers")
                    .atMost(Duration.ofMinutes(2))
                    .until(() -> manager.executorAddresses().size() == 2);
            Map<String, URI> now = manager.executorAddresses();
            assertFalse(now.containsKey(victim), now.toString());

            // And the shuffle runs between the survivor and the newcomer, over ucx4j.
            List<Tuple2<Long, Long>> sums = ShuffleJobs.pairs(sc, 20_000, 101)
                    .reduceByKey(new HashPartitioner(4), Long::sum)
                    .collect();
            assertEquals(101, sums.size());
            assertEquals(
                    20_000L * 19_999L / 2, sums.stream().mapToLong(Tuple2::_2).sum());
            await("blocks crossed ucx4j").atMost(Duration.ofSeconds(30)).until(() -> manager.remoteBytesFetched() > 0);
        }
    }

    /** The messages of an exception and its causes (Spark wraps the driver's answer). */
    private static String messages(Throwable t) {
        StringBuilder all = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            all.append(c.getClass().getSimpleName())
                    .append(": ")
                    .append(c.getMessage())
                    .append(" | ");
        }
        return all.toString();
    }
}
