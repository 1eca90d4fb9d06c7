package org.ucx4j.spark;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.FetchFailed;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;

/**
 * Spark configurations for the tests: {@code local-cluster[2,1,1024]} (two executor JVMs of one core
 * each, so that blocks really travel between processes) on loopback with the ucx4j shuffle manager, and
 * a listener that adds up what Spark itself counted as read remotely.
 *
 * <p>{@code local-cluster} needs no Spark download: the executors run on this test's class path
 * ({@code spark.executor.extraClassPath}) and surefire sets {@code SPARK_TESTING} and
 * {@code SPARK_SCALA_VERSION} (see the pom).
 */
final class LocalClusters {
    private LocalClusters() {}

    static SparkConf ucx4j(String transport, String appName) {
        return new SparkConf()
                .setMaster("local-cluster[2,1,1024]")
                .setAppName(appName)
                .set("spark.driver.host", "127.0.0.1")
                .set("spark.driver.bindAddress", "127.0.0.1")
                .set("spark.executor.extraClassPath", System.getProperty("java.class.path"))
                .set("spark.shuffle.manager", UcxShuffleManager.class.getName())
                .set("spark.ucx4j.transport", transport)
                // Both executors share this host: without this they would read each other's files.
                .set("spark.shuffle.readHostLocalDisk", "false")
                .set("spark.ui.enabled", "false")
                .set("spark.ui.showConsoleProgress", "false");
    }

    static SparkConf local(String appName) {
        return new SparkConf()
                .setMaster("local[2]")
                .setAppName(appName)
                .set("spark.driver.host", "127.0.0.1")
                .set("spark.driver.bindAddress", "127.0.0.1")
                .set("spark.ui.enabled", "false")
                .set("spark.ui.showConsoleProgress", "false");
    }

    /** The driver's shuffle manager (the driver side of ours, in these tests). */
    static UcxShuffleManager driverManager() {
        return (UcxShuffleManager) SparkEnv.get().shuffleManager();
    }

    /** Adds up Spark's own shuffle read metrics and notes fetch failures. */
    static final class ShuffleReadListener extends SparkListener {
        final AtomicLong remoteBytesRead = new AtomicLong();
        final AtomicLong localBytesRead = new AtomicLong();
        final List<String> fetchFailures = new CopyOnWriteArrayList<>();

        @Override
        public void onTaskEnd(SparkListenerTaskEnd end) {
            if (end.taskInfo() != null && end.taskMetrics() != null) {
                remoteBytesRead.addAndGet(end.taskMetrics().shuffleReadMetrics().remoteBytesRead());
                localBytesRead.addAndGet(end.taskMetrics().shuffleReadMetrics().localBytesRead());
            }
            if (end.reason() instanceof FetchFailed f) {
                fetchFailures.add(f.toErrorString());
            }
        }
    }
}
