package org.ucx4j.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.spark.HashPartitioner;
import org.apache.spark.MapOutputTrackerMaster;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.storage.BlockId;
import org.apache.spark.storage.BlockManagerId;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ucx4j.UcxConfig;
import org.ucx4j.comm.Comm;
import org.ucx4j.comm.CommAuthenticationException;
import org.ucx4j.comm.CommContext;
import org.ucx4j.comm.CommException;
import org.ucx4j.comm.CommKeys;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.Message;
import org.ucx4j.testsupport.Requirements;
import scala.Tuple2;
import scala.Tuple3;

/**
 * With {@code spark.authenticate=true} the executors' shuffle servers require Spark's secret: a raw
 * ucx4j client without it, or with another secret, cannot connect, while one with Spark's secret fetches
 * a real block of a real shuffle (so the refusal is the secret's doing, not a broken server).
 */
@Tag("spark")
@Tag("native")
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class AuthenticationTest {
    private static final String SECRET = "ucx4j-spark-test-" + Long.toHexString(System.nanoTime());

    @Test
    void blocksNeedSparksSecret() {
        Requirements.assumeUcx();
        try (JavaSparkContext sc = new JavaSparkContext(LocalClusters.ucx4j("ucx", "authenticate")
                        .set("spark.authenticate", "true")
                        .set("spark.authenticate.secret", SECRET));
                CommContext raw = CommContext.create()) {
            JavaPairRDD<Long, Long> shuffled = ShuffleJobs.pairs(sc, 10_000, 31)
                    .partitionBy(new HashPartitioner(2))
                    .cache();
            assertEquals(10_000, shuffled.count());

            Map<String, URI> servers = LocalClusters.driverManager().executorAddresses();
            assertEquals(2, servers.size(), servers.toString());
            Tuple2<BlockManagerId, Tuple3<BlockId, Object, Object>> block = someBlock();
            URI server = servers.get(block._1().executorId());

            assertThrows(
                    CommException.class,
                    () -> raw.connect(server, options(null)).close(),
                    "no secret");
            assertThrows(
                    CommAuthenticationException.class,
                    () -> raw.connect(server, options("not-" + SECRET)).close(),
                    "a wrong secret");

            try (Comm comm = raw.connect(server, options(SECRET))) {
                comm.write(Message.ofBytes(BlockFetchProtocol.encodeRequest(
                        new String[] {block._2()._1().name()})));
                try (Message reply = comm.read()) {
                    List<BlockFetchProtocol.Entry> entries =
                            BlockFetchProtocol.decodeReply(reply.frame(0).toByteArray(), 1);
                    assertEquals(BlockFetchProtocol.OK, entries.get(0).status(), String.valueOf(entries.get(0)));
                    // The map status holds sizes rounded for compactness: the reply's header is exact.
                    assertEquals(entries.get(0).size(), reply.frame(1).size(), "the block's size");
                    assertTrue(reply.frame(1).size() > 0, "an empty block");
                }
            }
        }
    }

    private static CommOptions options(String secret) {
        UcxConfig.Builder config = UcxConfig.builder();
        if (secret != null) {
            config.set(CommKeys.AUTH_SECRET, secret);
        }
        return CommOptions.builder().config(config.build()).build();
    }

    /** A non-empty map output block of shuffle 0, from the driver's map output tracker. */
    private static Tuple2<BlockManagerId, Tuple3<BlockId, Object, Object>> someBlock() {
        MapOutputTrackerMaster tracker = (MapOutputTrackerMaster) SparkEnv.get().mapOutputTracker();
        var byExecutor = tracker.getMapSizesByExecutorId(0, 0, Integer.MAX_VALUE, 0, 2);
        while (byExecutor.hasNext()) {
            var next = byExecutor.next();
            var blocks = next._2().iterator();
            while (blocks.hasNext()) {
                Tuple3<BlockId, Object, Object> b = blocks.next();
                if ((Long) b._2() > 0) {
                    return new Tuple2<>(next._1(), b);
                }
            }
        }
        assertFalse(true, "shuffle 0 has no non-empty block");
        throw new AssertionError();
    }
}
