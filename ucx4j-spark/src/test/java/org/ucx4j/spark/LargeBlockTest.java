package org.ucx4j.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.net.URI;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.spark.HashPartitioner;
import org.apache.spark.MapOutputTrackerMaster;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.network.buffer.ManagedBuffer;
import org.apache.spark.network.shuffle.BlockFetchingListener;
import org.apache.spark.serializer.DeserializationStream;
import org.apache.spark.storage.BlockId;
import org.apache.spark.storage.BlockManagerId;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ucx4j.comm.CommContext;
import org.ucx4j.testsupport.Requirements;
import scala.Tuple2;
import scala.Tuple3;

/**
 * A shuffle block larger than 2 GiB: written by Spark's map task on an executor, served from its data
 * file over {@code ucx://} (mapped, one frame), fetched by our client and read back through Spark's own
 * deserializer from the received buffer's stream, record by record.
 */
@Tag("spark")
@Tag("native")
@Timeout(value = 6, unit = TimeUnit.MINUTES)
class LargeBlockTest {
    private static final int VALUE_BYTES = 1 << 20;
    private static final int RECORDS = 2_100; // 2.05 GiB of values in one block

    @Test
    void blockOverTwoGiB() throws Exception {
        Requirements.assumeUcx();
        try (JavaSparkContext sc = new JavaSparkContext(
                        LocalClusters.ucx4j("ucx", "large-block").set("spark.shuffle.compress", "false"));
                CommContext context = CommContext.create()) {
            var shuffled = sc.parallelize(List.of(0), 1)
                    .flatMapToPair(p -> new PatternRecords())
                    .partitionBy(new HashPartitioner(1));
            @SuppressWarnings("unchecked")
            ShuffleDependency<Integer, byte[], byte[]> dependency = (ShuffleDependency<Integer, byte[], byte[]>)
                    shuffled.rdd().dependencies().head();
            sc.sc().submitMapStage(dependency).get(); // the class timeout bounds it

            MapOutputTrackerMaster tracker =
                    (MapOutputTrackerMaster) SparkEnv.get().mapOutputTracker();
            Tuple2<BlockManagerId, scala.collection.Seq<Tuple3<BlockId, Object, Object>>> only =
                    tracker.getMapSizesByExecutorId(dependency.shuffleId(), 0, 1, 0, 1)
                            .next();
            BlockId block = only._2().head()._1();
            Map<String, URI> servers = LocalClusters.driverManager().executorAddresses();
            URI server = servers.get(only._1().executorId());

            ShuffleTransportSettings settings = new ShuffleTransportSettings(
                    "ucx",
                    "ucx",
                    null,
                    org.ucx4j.comm.CommOptions.defaults(),
                    Duration.ofMinutes(3),
                    1 << 20,
                    0,
                    Duration.ZERO,
                    false,
                    16,
                    Duration.ofMinutes(1));
            PeerDirectory directory = new PeerDirectory() {
                @Override
                public URI lookup(String executorId) {
                    return server;
                }

                @Override
                public void reportFetched(String executorId, long bytes) {}
            };
            CompletableFuture<long[]> read = new CompletableFuture<>();
            try (UcxBlockStoreClient client = new UcxBlockStoreClient(context, settings, directory, "test")) {
                client.fetchBlocks(
                        "127.0.0.1",
                        0,
                        only._1().executorId(),
                        new String[] {block.name()},
                        new BlockFetchingListener() {
                            @Override
                            public void onBlockFetchSuccess(String blockId, ManagedBuffer data) {
                                try {
                                    read.complete(verify(data));
                                } catch (Throwable t) {
                                    read.completeExceptionally(t);
                                }
                            }

                            @Override
                            public void onBlockFetchFailure(String blockId, Throwable failure) {
                                read.completeExceptionally(failure);
                            }
                        },
                        null);
                long[] sizeAndRecords = read.get(4, TimeUnit.MINUTES);
                assertTrue(sizeAndRecords[0] > (2L << 30), "block of " + sizeAndRecords[0] + " bytes");
                assertEquals(RECORDS, sizeAndRecords[1]);
            }
        }
    }

    /** RECORDS values of 1 MiB, each filled with its key's low byte, made one at a time (never all in memory). */
    private static final class PatternRecords implements Iterator<Tuple2<Integer, byte[]>> {
        private int i;

        @Override
        public boolean hasNext() {
            return i < RECORDS;
        }

        @Override
        public Tuple2<Integer, byte[]> next() {
            byte[] value = new byte[VALUE_BYTES];
            java.util.Arrays.fill(value, (byte) i);
            return new Tuple2<>(i++, value);
        }
    }

    /** Reads every record back through Spark's serializer; returns the block's size and the record count. */
    private static long[] verify(ManagedBuffer data) throws Exception {
        long records = 0;
        try (InputStream in = data.createInputStream()) {
            DeserializationStream stream =
                    SparkEnv.get().serializer().newInstance().deserializeStream(in);
            var it = stream.asKeyValueIterator();
            while (it.hasNext()) {
                Tuple2<Object, Object> kv = it.next();
                int key = (Integer) kv._1();
                byte[] value = (byte[]) kv._2();
                if (value.length != VALUE_BYTES || value[0] != (byte) key || value[VALUE_BYTES - 1] != (byte) key) {
                    throw new AssertionError("record " + key + " came back wrong");
                }
                records++;
            }
        }
        return new long[] {data.size(), records};
    }
}
