package org.ucx4j.spark;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ucx4j.testsupport.Requirements;

/**
 * Sort, group-by, join, a skewed aggregation and mostly empty partitions give the same results shuffled
 * between two executor JVMs over ucx4j as in {@code local} mode, and every byte Spark read remotely went
 * through ucx4j (the driver's count of bytes fetched by our client equals Spark's remote bytes read).
 */
@Tag("spark")
@Tag("native")
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class ShuffleResultsTest {
    private static Map<String, Object> expected;

    @BeforeAll
    static void localMode() {
        try (JavaSparkContext sc = new JavaSparkContext(LocalClusters.local("expected"))) {
            expected = ShuffleJobs.runAll(sc);
        }
    }

    @Test
    void overUcx() {
        Requirements.assumeUcx();
        check("ucx");
    }

    @Test
    void overTcp() {
        check("tcp");
    }

    private static void check(String transport) {
        LocalClusters.ShuffleReadListener reads = new LocalClusters.ShuffleReadListener();
        try (JavaSparkContext sc = new JavaSparkContext(LocalClusters.ucx4j(transport, "results-" + transport))) {
            sc.sc().addSparkListener(reads);
            Map<String, Object> actual = ShuffleJobs.runAll(sc);
            for (String job : expected.keySet()) {
                assertEquals(expected.get(job), actual.get(job), job + " over " + transport + "://");
            }
            UcxShuffleManager manager = LocalClusters.driverManager();
            assertEquals(
                    2,
                    manager.executorAddresses().size(),
                    manager.executorAddresses().toString());
            manager.executorAddresses().values().forEach(uri -> assertEquals(transport, uri.getScheme()));
            // Listener events and fetch reports travel asynchronously: wait until both settle.
            await("ucx4j's fetched bytes equal Spark's remote bytes read")
                    .atMost(Duration.ofSeconds(30))
                    .untilAsserted(() -> {
                        assertTrue(reads.remoteBytesRead.get() > 0, "no remote reads at all");
                        assertEquals(reads.remoteBytesRead.get(), manager.remoteBytesFetched());
                    });
        }
    }
}
