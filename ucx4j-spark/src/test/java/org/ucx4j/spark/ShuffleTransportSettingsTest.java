package org.ucx4j.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.ucx4j.UcxConfigException;
import org.ucx4j.UcxKeys;
import org.ucx4j.WorkerOptions;
import org.ucx4j.comm.CommKeys;

/** Spark conf to ucx4j settings: the plug-in's own keys, every other spark.ucx4j.* key, Spark's secret. */
@Tag("spark")
class ShuffleTransportSettingsTest {
    @Test
    void ucx4jKeysPassThroughAndOwnKeysDoNot() {
        SparkConf conf = new SparkConf(false)
                .set("spark.ucx4j.transport", "tcp")
                .set("spark.ucx4j.shuffle.timeout", "7s")
                .set("spark.ucx4j.shuffle.server.maxBytesInFlight", "64m")
                .set("spark.ucx4j.connect-timeout", "3s")
                .set("spark.ucx4j.max-frames", "17")
                .set("spark.shuffle.io.maxRetries", "5")
                .set("spark.shuffle.io.retryWait", "250ms")
                .set("spark.ucx4j.shuffle.maxConnectionsPerPeer", "3")
                .set("spark.ucx4j.shuffle.idleTimeout", "1500ms");
        assertEquals(Map.of("connect-timeout", "3s", "max-frames", "17"), ShuffleTransportSettings.ucx4jKeys(conf));
        ShuffleTransportSettings s = ShuffleTransportSettings.from(conf, null);
        assertEquals("tcp", s.scheme());
        assertEquals(Duration.ofSeconds(7), s.fetchTimeout());
        assertEquals(64L << 20, s.serverMaxBytesInFlight());
        assertEquals(5, s.maxRetries());
        assertEquals(Duration.ofMillis(250), s.retryWait());
        assertEquals(3, s.maxConnectionsPerPeer());
        assertEquals(Duration.ofMillis(1500), s.idleTimeout());
        assertEquals(Duration.ofSeconds(3), s.options().config().get(UcxKeys.CONNECT_TIMEOUT));
        assertEquals(17, s.options().maxFrames());
        assertFalse(s.authenticated());
        assertTrue(s.options().secret().isEmpty());
    }

    @Test
    void progressSpinIsUcx4jsUnlessSparkSetsIt() {
        SparkConf conf = new SparkConf(false).set("spark.ucx4j.transport", "tcp");
        assertEquals(
                WorkerOptions.DEFAULT_SPIN,
                ShuffleTransportSettings.from(conf, null).options().config().get(UcxKeys.PROGRESS_SPIN));
        conf.set("spark.ucx4j.progress-spin", "0");
        assertEquals(
                Duration.ZERO,
                ShuffleTransportSettings.from(conf, null).options().config().get(UcxKeys.PROGRESS_SPIN));
    }

    @Test
    void fetchTimeoutDefaultsToSparksNetworkTimeout() {
        SparkConf conf =
                new SparkConf(false).set("spark.ucx4j.transport", "tcp").set("spark.network.timeout", "45s");
        assertEquals(
                Duration.ofSeconds(45),
                ShuffleTransportSettings.from(conf, null).fetchTimeout());
    }

    @Test
    void sparksSecretWinsOverUcx4js() {
        SparkConf conf = new SparkConf(false)
                .set("spark.ucx4j.transport", "tcp")
                .set("spark.authenticate", "true")
                .set("spark.ucx4j.auth.secret", "ucx4j-own");
        ShuffleTransportSettings s = ShuffleTransportSettings.from(conf, "spark-secret-of-this-app");
        assertTrue(s.authenticated());
        assertArrayEquals(
                "spark-secret-of-this-app".getBytes(StandardCharsets.UTF_8),
                s.options().secret().orElseThrow());
        assertFalse(s.describe("tcp://h:1").contains("spark-secret-of-this-app"), "the secret is never printed");
        assertEquals("spark-secret-of-this-app", s.options().config().get(CommKeys.AUTH_SECRET));
    }

    @Test
    void badValuesNameTheSetting() {
        IllegalArgumentException transport = assertThrows(
                IllegalArgumentException.class,
                () -> ShuffleTransportSettings.from(new SparkConf(false).set("spark.ucx4j.transport", "rdma"), null));
        assertTrue(transport.getMessage().contains("spark.ucx4j.transport"), transport.getMessage());
        UcxConfigException unknown = assertThrows(
                UcxConfigException.class,
                () -> ShuffleTransportSettings.from(
                        new SparkConf(false).set("spark.ucx4j.transport", "tcp").set("spark.ucx4j.no-such-key", "1"),
                        null));
        assertTrue(unknown.getMessage().contains("no-such-key"), unknown.getMessage());
        IllegalArgumentException noSecret = assertThrows(
                IllegalArgumentException.class,
                () -> ShuffleTransportSettings.from(
                        new SparkConf(false).set("spark.ucx4j.transport", "tcp").set("spark.authenticate", "true"),
                        null));
        assertTrue(noSecret.getMessage().contains("spark.authenticate"), noSecret.getMessage());
        IllegalArgumentException noConnections = assertThrows(
                IllegalArgumentException.class,
                () -> ShuffleTransportSettings.from(
                        new SparkConf(false)
                                .set("spark.ucx4j.transport", "tcp")
                                .set("spark.ucx4j.shuffle.maxConnectionsPerPeer", "0"),
                        null));
        assertTrue(
                noConnections.getMessage().contains("spark.ucx4j.shuffle.maxConnectionsPerPeer"),
                noConnections.getMessage());
    }
}
