package org.ucx4j.spark;

import java.io.Serial;
import java.net.URI;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkContext$;
import org.apache.spark.rpc.RpcCallContext;
import org.apache.spark.rpc.RpcEndpoint;
import org.apache.spark.rpc.RpcEndpointRef;
import org.apache.spark.rpc.RpcEnv;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.util.RpcUtils;
import scala.Function1;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag;
import scala.runtime.AbstractPartialFunction;
import scala.runtime.BoxedUnit;

/**
 * How executors find each other's shuffle servers without a fixed port: each executor's server listens on
 * a free port and registers its address with an RPC endpoint on the driver (Spark's own RPC, so it is
 * authenticated and encrypted as Spark's is); a reducer asks the driver for a peer's address once and
 * keeps it. Executors register when they start (not at their first shuffle task), so every executor's
 * blocks can be found. The driver forgets executors Spark removes (lost, killed, decommissioned: a
 * {@link SparkListener} on {@code onExecutorRemoved}); a lookup of one
 * answers that it was removed, and the fetcher fails its blocks at once (Spark's {@code FetchFailed}, the
 * map stage re-runs) instead of retrying a dead address. Executors also report the bytes they fetched over
 * ucx4j, so that the driver can tell how much of the shuffle went through it
 * ({@link Driver#bytesFetched()}).
 *
 * <p>An executor registers once: the driver refuses a second, different address for it, and an id that
 * Spark's scheduler does not hold ({@link Driver#register}), so a sender that reaches the driver's RPC
 * cannot speak for an executor that registered.
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
    private static final String FOUND = "address";
    private static final String REMOVED = "removed";
    private static final String UNKNOWN = "unknown";
    /** Removed executors remembered (their ids are never reused; the oldest are forgotten first). */
    static final int REMOVED_KEPT = 10_000;

    private ExecutorAddressRegistry() {}

    /**
     * The driver side: an RPC endpoint holding executor id to address.
     *
     * <p>Threading: Spark's dispatcher calls it from its threads; the maps are concurrent.
     */
    static final class Driver implements RpcEndpoint {
        private final RpcEnv rpcEnv;
        private final Map<String, String> addresses = new ConcurrentHashMap<>();
        private final Map<String, String> removed = Collections.synchronizedMap(new LinkedHashMap<>() {
            @Serial
            private static final long serialVersionUID = 1L;

            @Override
            protected boolean removeEldestEntry(Map.Entry<String, String> eldest) {
                return size() > REMOVED_KEPT;
            }
        });
        private final LongAdder bytesFetched = new LongAdder();
        private final LongAdder fetchReports = new LongAdder();
        private final AtomicBoolean watching = new AtomicBoolean();

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

        /**
         * Forgets an executor Spark removed; lookups of it answer that it is gone.
         *
         * @param executorId the executor
         * @param reason Spark's reason, for the fetch failure's message
         */
        void executorRemoved(String executorId, String reason) {
            removed.put(executorId, reason == null || reason.isBlank() ? "no reason given" : reason);
            addresses.remove(executorId);
        }

        /**
         * Starts following executor removals once the driver's {@code SparkContext} is active (the shuffle
         * manager is created inside its constructor, before there is one to listen to), then forgets the
         * executors already gone meanwhile. Called with each message and each new shuffle; cheap once done.
         */
        void watchRemovals() {
            if (watching.get()) {
                return;
            }
            Option<SparkContext> active = SparkContext$.MODULE$.getActive();
            if (active.isEmpty() || !watching.compareAndSet(false, true)) {
                return;
            }
            active.get().addSparkListener(new RemovalListener(this));
            Set<String> live = liveExecutors();
            if (live != null) {
                for (String id : List.copyOf(addresses.keySet())) {
                    if (!live.contains(id)) {
                        executorRemoved(id, "removed before the ucx4j registry was watching");
                    }
                }
            }
        }

        /**
         * The executors Spark's scheduler holds now, or null where it cannot tell (no active context, or a
         * scheduler that keeps no executor list, as in {@code local} mode).
         */
        private static Set<String> liveExecutors() {
            Option<SparkContext> active = SparkContext$.MODULE$.getActive();
            if (active.isEmpty()) {
                return null;
            }
            Set<String> live =
                    new HashSet<>(CollectionConverters.asJava(active.get().getExecutorIds()));
            if (live.isEmpty()) {
                return null;
            }
            live.add(SparkContext$.MODULE$.DRIVER_IDENTIFIER());
            return live;
        }

        /**
         * Records an executor's address, unless that would let one sender speak for another executor:
         * an id Spark's scheduler does not hold (where it can tell), an executor Spark removed, or an
         * executor that registered another address already (each registers once, when it starts, and
         * Spark never reuses an id). So whoever can reach the driver's RPC cannot redirect an executor's
         * blocks to an address of its choosing once that executor has registered.
         *
         * @return null when recorded (or already recorded, the same), else why it was refused
         */
        String register(String executorId, String address) {
            if (removed.containsKey(executorId)) {
                return "executor " + executorId + " was already removed by Spark";
            }
            Set<String> live = liveExecutors();
            if (live != null && !live.contains(executorId)) {
                return "executor " + executorId + " is not one of Spark's executors: registration refused";
            }
            String before = addresses.putIfAbsent(executorId, address);
            if (before != null && !before.equals(address)) {
                return "executor " + executorId + " registered its ucx4j shuffle address already: another one refused";
            }
            return null;
        }

        /** The executor's address, after checking with the scheduler that it was not removed meanwhile. */
        private String liveAddress(String executorId) {
            String address = addresses.get(executorId);
            if (address == null) {
                return null;
            }
            // The listener hears of a removal a little after the scheduler: ask the scheduler too, so that a
            // fetcher whose connection failed learns at once that the executor is gone.
            Set<String> live = liveExecutors();
            if (live != null && !live.contains(executorId)) {
                executorRemoved(executorId, "Spark's scheduler no longer has it");
                return null;
            }
            return address;
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
                    watchRemovals();
                    if (parts.length == 3 && parts[0].equals(REGISTER)) {
                        URI.create(parts[2]);
                        String refused = register(parts[1], parts[2]);
                        if (refused != null) {
                            context.sendFailure(new IllegalStateException(refused));
                            return;
                        }
                        context.reply("");
                    } else if (parts.length == 2 && parts[0].equals(LOOKUP)) {
                        String address = liveAddress(parts[1]);
                        String gone = removed.get(parts[1]);
                        if (address != null) {
                            context.reply(FOUND + SEP + address);
                        } else if (gone != null) {
                            context.reply(REMOVED + SEP + gone);
                        } else {
                            context.reply(UNKNOWN);
                        }
                    } else {
                        context.sendFailure(new IllegalArgumentException("unknown ucx4j registry message"));
                    }
                }
            };
        }
    }

    /** Tells the registry which executors Spark removed. Runs on Spark's listener bus thread. */
    private static final class RemovalListener extends SparkListener {
        private final Driver registry;

        RemovalListener(Driver registry) {
            this.registry = registry;
        }

        @Override
        public void onExecutorRemoved(SparkListenerExecutorRemoved removed) {
            registry.executorRemoved(removed.executorId(), removed.reason());
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
            String[] answer = driver.askSync(LOOKUP + SEP + executorId, STRING).split(String.valueOf(SEP), 2);
            if (answer.length == 2 && answer[0].equals(REMOVED)) {
                throw new ExecutorRemovedException(
                        "executor " + executorId + " was removed by Spark (" + answer[1] + "): its blocks are lost");
            }
            if (answer.length != 2 || !answer[0].equals(FOUND)) {
                throw new IllegalStateException("executor " + executorId
                        + " registered no ucx4j shuffle address with the driver (is spark.shuffle.manager"
                        + " the same on every executor?)");
            }
            URI uri = URI.create(answer[1]);
            cache.put(executorId, uri);
            return uri;
        }

        @Override
        public void forget(String executorId) {
            cache.remove(executorId);
        }

        @Override
        public void reportFetched(String executorId, long bytes) {
            driver.send(FETCHED + SEP + executorId + SEP + bytes);
        }
    }

    /** A lookup of an executor Spark has removed: its blocks cannot be fetched, only recomputed. */
    static final class ExecutorRemovedException extends IllegalStateException {
        @Serial
        private static final long serialVersionUID = 1L;

        ExecutorRemovedException(String message) {
            super(message);
        }
    }
}
