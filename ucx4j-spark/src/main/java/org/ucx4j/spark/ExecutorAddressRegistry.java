package org.ucx4j.spark;

import java.io.Serial;
import java.net.URI;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import org.apache.spark.SparkConf;
import org.apache.spark.rpc.RpcCallContext;
import org.apache.spark.rpc.RpcEndpoint;
import org.apache.spark.rpc.RpcEndpointRef;
import org.apache.spark.rpc.RpcEnv;
import org.apache.spark.util.RpcUtils;
import scala.Function1;
import scala.reflect.ClassTag;
import scala.runtime.AbstractPartialFunction;
import scala.runtime.BoxedUnit;

/**
 * How executors find each other's shuffle servers without a fixed port: each executor's server listens on
 * a free port and registers its address with an RPC endpoint on the driver (Spark's own RPC, so it is
 * authenticated and encrypted as Spark's is); a reducer asks the driver for a peer's address once and
 * keeps it. Executors also report the bytes they fetched over ucx4j, so that the driver can tell how much
 * of the shuffle went through it ({@link Driver#bytesFetched()}).
 *
 * <p>Messages are plain strings, so that the driver's RPC threads need none of our classes to read them.
 */
final class ExecutorAddressRegistry {
    /** The driver endpoint's name. */
    static final String ENDPOINT_NAME = "ucx4j-shuffle-registry";

    private static final String REGISTER = "register";
    private static final String LOOKUP = "lookup";
    private static final String FETCHED = "fetched";
    private static final char SEP = '\n';

    private ExecutorAddressRegistry() {}

    /**
     * The driver side: an RPC endpoint holding executor id to address.
     *
     * <p>Threading: Spark's dispatcher calls it from its threads; the maps are concurrent.
     */
    static final class Driver implements RpcEndpoint {
        private final RpcEnv rpcEnv;
        private final Map<String, String> addresses = new ConcurrentHashMap<>();
        private final LongAdder bytesFetched = new LongAdder();
        private final LongAdder fetchReports = new LongAdder();

        Driver(RpcEnv rpcEnv) {
            this.rpcEnv = rpcEnv;
        }

        @Override
        public RpcEnv rpcEnv() {
            return rpcEnv;
        }

        Map<String, URI> addresses() {
            Map<String, URI> copy = new ConcurrentHashMap<>();
            addresses.forEach((k, v) -> copy.put(k, URI.create(v)));
            return copy;
        }

        long bytesFetched() {
            return bytesFetched.sum();
        }

        long fetchReports() {
            return fetchReports.sum();
        }

        @Override
        public scala.PartialFunction<Object, BoxedUnit> receive() {
            return new Handler() {
                @Serial
                private static final long serialVersionUID = 1L;

                @Override
                void handle(String[] parts) {
                    if (parts.length == 3 && parts[0].equals(FETCHED)) {
                        bytesFetched.add(Long.parseLong(parts[2]));
                        fetchReports.increment();
                    }
                }
            };
        }

        @Override
        public scala.PartialFunction<Object, BoxedUnit> receiveAndReply(RpcCallContext context) {
            return new Handler() {
                @Serial
                private static final long serialVersionUID = 1L;

                @Override
                void handle(String[] parts) {
                    if (parts.length == 3 && parts[0].equals(REGISTER)) {
                        URI.create(parts[2]);
                        addresses.put(parts[1], parts[2]);
                        context.reply("");
                    } else if (parts.length == 2 && parts[0].equals(LOOKUP)) {
                        context.reply(addresses.getOrDefault(parts[1], ""));
                    } else {
                        context.sendFailure(new IllegalArgumentException("unknown ucx4j registry message"));
                    }
                }
            };
        }
    }

    /** Matches our string messages. */
    private abstract static class Handler extends AbstractPartialFunction<Object, BoxedUnit> {
        @Serial
        private static final long serialVersionUID = 1L;

        abstract void handle(String[] parts);

        @Override
        public boolean isDefinedAt(Object message) {
            return message instanceof String;
        }

        @Override
        public <A1, B1> B1 applyOrElse(A1 message, Function1<A1, B1> fallback) {
            if (message instanceof String s) {
                handle(s.split(String.valueOf(SEP), -1));
                @SuppressWarnings("unchecked")
                B1 unit = (B1) BoxedUnit.UNIT;
                return unit;
            }
            return fallback.apply(message);
        }
    }

    /**
     * The executor side: registers this executor's address and looks up others', caching them.
     *
     * <p>Threading: safe from any thread.
     */
    static final class Client implements PeerDirectory {
        private static final ClassTag<String> STRING = scala.reflect.ClassTag$.MODULE$.apply(String.class);
        private final RpcEndpointRef driver;
        private final Map<String, URI> cache = new ConcurrentHashMap<>();

        Client(SparkConf conf, RpcEnv rpcEnv) {
            this.driver = RpcUtils.makeDriverRef(ENDPOINT_NAME, conf, rpcEnv);
        }

        void register(String executorId, URI address) {
            driver.askSync(REGISTER + SEP + executorId + SEP + address, STRING);
        }

        @Override
        public URI lookup(String executorId) {
            URI known = cache.get(executorId);
            if (known != null) {
                return known;
            }
            String answer = driver.askSync(LOOKUP + SEP + executorId, STRING);
            if (answer.isEmpty()) {
                throw new IllegalStateException("executor " + executorId
                        + " registered no ucx4j shuffle address with the driver (is spark.shuffle.manager"
                        + " the same on every executor?)");
            }
            URI uri = URI.create(answer);
            cache.put(executorId, uri);
            return uri;
        }

        @Override
        public void reportFetched(String executorId, long bytes) {
            driver.send(FETCHED + SEP + executorId + SEP + bytes);
        }
    }
}
