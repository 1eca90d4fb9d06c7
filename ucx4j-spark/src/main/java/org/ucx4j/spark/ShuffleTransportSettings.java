package org.ucx4j.spark;

import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import org.apache.spark.SparkConf;
import org.ucx4j.Ucx;
import org.ucx4j.UcxConfig;
import org.ucx4j.comm.CommKeys;
import org.ucx4j.comm.CommOptions;
import scala.Tuple2;

/**
 * What the ucx4j shuffle reads from Spark's configuration, read once per shuffle manager.
 *
 * <p>The plug-in's own settings are {@code spark.ucx4j.transport} ({@code ucx} or {@code tcp}),
 * {@code spark.ucx4j.shuffle.timeout}, {@code spark.ucx4j.shuffle.server.maxBytesInFlight},
 * {@code spark.ucx4j.shuffle.maxConnectionsPerPeer} and {@code spark.ucx4j.shuffle.idleTimeout}; every other
 * {@code spark.ucx4j.<key>} is a ucx4j configuration key ({@code spark.ucx4j.connect-timeout=5s},
 * {@code spark.ucx4j.environment.log-level=info}), set in a {@link UcxConfig} above the usual sources
 * ({@code -Ducx4j.*}, {@code UCX4J__*}, {@code ucx4j.yaml}), which still apply. With
 * {@code spark.authenticate=true} the handshake's secret is Spark's own.
 *
 * <p>Threading: immutable. Ownership: holds no native resource.
 *
 * @param scheme the transport's URI scheme actually used ({@code ucx} or {@code tcp})
 * @param requestedScheme the scheme asked for by {@code spark.ucx4j.transport}
 * @param fallbackReason why the requested transport was not used, or null when it was
 * @param options the comm options (configuration, secret)
 * @param fetchTimeout how long a fetch may wait for its reply before failing
 * @param serverMaxBytesInFlight the most bytes one executor serves at once, all requests together
 * @param maxRetries how often a fetch whose connection failed is tried again ({@code spark.shuffle.io.maxRetries})
 * @param retryWait the pause before such a retry ({@code spark.shuffle.io.retryWait})
 * @param authenticated whether {@code spark.authenticate} is on
 * @param maxConnectionsPerPeer the most connections one executor holds to one peer's server, and the most
 *     one server accepts from one peer
 * @param idleTimeout how long a client keeps an unused connection before closing it (a server closes a
 *     connection that sends no request for twice this)
 */
public record ShuffleTransportSettings(
        String scheme,
        String requestedScheme,
        String fallbackReason,
        CommOptions options,
        Duration fetchTimeout,
        long serverMaxBytesInFlight,
        int maxRetries,
        Duration retryWait,
        boolean authenticated,
        int maxConnectionsPerPeer,
        Duration idleTimeout) {

    /** Spark configuration prefix of everything ucx4j reads. */
    public static final String PREFIX = "spark.ucx4j.";
    /** The transport: {@code ucx} (default) or {@code tcp}. */
    public static final String TRANSPORT = PREFIX + "transport";
    /** How long a fetch waits for its reply (default: {@code spark.network.timeout}, 120 s). */
    public static final String FETCH_TIMEOUT = PREFIX + "shuffle.timeout";
    /** The most bytes an executor serves at once, all peers together (default 256 MiB). */
    public static final String SERVER_MAX_BYTES_IN_FLIGHT = PREFIX + "shuffle.server.maxBytesInFlight";
    /** The most connections between one executor and one peer's server, each way (default 16). */
    public static final String MAX_CONNECTIONS_PER_PEER = PREFIX + "shuffle.maxConnectionsPerPeer";
    /** How long an unused connection stays open (default 60 s; servers wait twice this). */
    public static final String IDLE_TIMEOUT = PREFIX + "shuffle.idleTimeout";

    /** Checks the values. */
    public ShuffleTransportSettings {
        Objects.requireNonNull(scheme, "scheme");
        Objects.requireNonNull(options, "options");
        Objects.requireNonNull(fetchTimeout, "fetchTimeout");
        try {
            fetchTimeout.toNanos(); // the fetcher's deadline and the server's waits are in nanoseconds
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException(
                    FETCH_TIMEOUT + " is too long: " + fetchTimeout + " (at most about 292 years)");
        }
        Objects.requireNonNull(retryWait, "retryWait");
        if (serverMaxBytesInFlight < 1) {
            throw new IllegalArgumentException(SERVER_MAX_BYTES_IN_FLIGHT + " must be at least 1 byte");
        }
        Objects.requireNonNull(idleTimeout, "idleTimeout");
        if (maxConnectionsPerPeer < 1) {
            throw new IllegalArgumentException(MAX_CONNECTIONS_PER_PEER + " must be at least 1");
        }
        if (idleTimeout.isZero() || idleTimeout.isNegative()) {
            throw new IllegalArgumentException(IDLE_TIMEOUT + " must be positive");
        }
    }

    /**
     * Reads the settings.
     *
     * @param conf Spark's configuration
     * @param sparkSecret Spark's shared secret when {@code spark.authenticate} is on, else null
     * @return the settings
     * @throws IllegalArgumentException naming the setting when a value is wrong (an unknown transport, an
     *     unknown ucx4j key, a bad value), or when authentication is on and no secret is given
     */
    public static ShuffleTransportSettings from(SparkConf conf, String sparkSecret) {
        String requested = conf.get(TRANSPORT, "ucx").strip().toLowerCase(Locale.ROOT);
        if (!requested.equals("ucx") && !requested.equals("tcp")) {
            throw new IllegalArgumentException(TRANSPORT + " must be ucx or tcp, not '" + requested + "'");
        }
        String scheme = requested;
        String fallback = null;
        if (requested.equals("ucx") && !Ucx.isAvailable()) {
            scheme = "tcp";
            fallback = String.valueOf(Ucx.unavailabilityCause().getMessage());
        }
        UcxConfig.Builder config = UcxConfig.builder();
        for (Map.Entry<String, String> e : ucx4jKeys(conf).entrySet()) {
            config.set(e.getKey(), e.getValue());
        }
        boolean authenticated = conf.getBoolean("spark.authenticate", false);
        if (authenticated) {
            if (sparkSecret == null || sparkSecret.isEmpty()) {
                throw new IllegalArgumentException("spark.authenticate is true but Spark has no secret to share");
            }
            // Spark's secret wins over a ucx4j one, so that one setting protects both transports.
            config.set(CommKeys.AUTH_SECRET_FILE, null);
            config.set(CommKeys.AUTH_SECRET, sparkSecret);
        }
        CommOptions options = CommOptions.builder()
                .config(config.build())
                .identity("spark-executor/" + ProcessHandle.current().pid())
                .build();
        long networkTimeout = conf.getTimeAsSeconds("spark.network.timeout", "120s");
        Duration fetchTimeout = Duration.ofMillis(conf.getTimeAsMs(FETCH_TIMEOUT, networkTimeout + "s"));
        if (fetchTimeout.isZero() || fetchTimeout.isNegative()) {
            throw new IllegalArgumentException(FETCH_TIMEOUT + " must be positive");
        }
        long serverBytes = conf.getSizeAsBytes(SERVER_MAX_BYTES_IN_FLIGHT, "256m");
        int maxRetries = conf.getInt("spark.shuffle.io.maxRetries", 3);
        Duration retryWait = Duration.ofMillis(conf.getTimeAsMs("spark.shuffle.io.retryWait", "5s"));
        int maxConnections = conf.getInt(MAX_CONNECTIONS_PER_PEER, 16);
        Duration idleTimeout = Duration.ofMillis(conf.getTimeAsMs(IDLE_TIMEOUT, "60s"));
        return new ShuffleTransportSettings(
                scheme,
                requested,
                fallback,
                options,
                fetchTimeout,
                serverBytes,
                Math.max(0, maxRetries),
                retryWait,
                authenticated,
                maxConnections,
                idleTimeout);
    }

    /**
     * The ucx4j configuration keys set in Spark's configuration: every {@code spark.ucx4j.<key>} except
     * the plug-in's own settings, with the prefix removed.
     *
     * @param conf Spark's configuration
     * @return key to value, sorted
     */
    static Map<String, String> ucx4jKeys(SparkConf conf) {
        Map<String, String> keys = new TreeMap<>();
        for (Tuple2<String, String> t : conf.getAllWithPrefix(PREFIX)) {
            String key = t._1();
            if (key.equals("transport") || key.startsWith("shuffle.")) {
                continue;
            }
            keys.put(key, t._2());
        }
        return keys;
    }

    /**
     * The line logged at start: which transport carries the shuffle, and why when it is not the one
     * asked for.
     *
     * @param listening the server's address
     * @return the sentence (no secret in it)
     */
    String describe(String listening) {
        String s = "ucx4j shuffle: remote blocks travel over " + scheme + "://, served at " + listening
                + (authenticated ? " (spark.authenticate: connections need Spark's secret)" : "");
        if (fallbackReason != null) {
            s += "; " + TRANSPORT + "=" + requestedScheme + " asked for UCX, which is unavailable here ("
                    + fallbackReason + "), so tcp:// is used";
        }
        return s;
    }
}
