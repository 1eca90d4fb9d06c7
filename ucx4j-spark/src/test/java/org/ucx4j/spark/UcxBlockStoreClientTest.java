package org.ucx4j.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.apache.spark.network.buffer.ManagedBuffer;
import org.apache.spark.network.shuffle.BlockFetchingListener;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.ucx4j.UcxConfig;
import org.ucx4j.comm.Comm;
import org.ucx4j.comm.CommAuthenticationException;
import org.ucx4j.comm.CommClosedException;
import org.ucx4j.comm.CommContext;
import org.ucx4j.comm.CommException;
import org.ucx4j.comm.CommKeys;
import org.ucx4j.comm.CommListener;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.CommProtocolException;
import org.ucx4j.comm.CommTimeoutException;
import org.ucx4j.comm.Frame;
import org.ucx4j.comm.Message;
import org.ucx4j.testsupport.Requirements;

/**
 * The fetcher against servers that misbehave, over {@code tcp://} and {@code ucx://}: each failure (a
 * refused block, a truncated block, a reply that never comes, a dead peer, a wrong secret) completes
 * Spark's listener with {@code onBlockFetchFailure} for every block (which Spark turns into a
 * {@code FetchFailedException}), within the configured time; a well-behaved server's blocks arrive whole.
 */
@Tag("spark")
@Tag("native")
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class UcxBlockStoreClientTest {
    private final CommContext context = CommContext.create();
    private final AtomicLong reported = new AtomicLong();

    @AfterEach
    void close() {
        context.close();
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "ucx"})
    void servedBlocksArriveWhole(String scheme) throws Exception {
        Map<String, Object> outcome = fetch(scheme, null, null, UcxBlockStoreClientTest::serveTwoBlocks);
        assertEquals("1,2,3", outcome.get("a"));
        assertEquals("4,5,6,7,8", outcome.get("b"));
        assertEquals(8, reported.get());
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "ucx"})
    void refusedBlockFailsThatBlock(String scheme) throws Exception {
        Map<String, Object> outcome = fetch(
                scheme,
                null,
                null,
                comm -> reply(
                        comm,
                        List.of(
                                new BlockFetchProtocol.Entry(BlockFetchProtocol.OK, 2, null),
                                new BlockFetchProtocol.Entry(BlockFetchProtocol.ERROR, 0, "no such block")),
                        new byte[] {9, 9}));
        assertEquals("9,9", outcome.get("a"));
        Throwable failure = assertInstanceOf(Throwable.class, outcome.get("b"));
        assertTrue(failure.getMessage().contains("no such block"), failure.getMessage());
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "ucx"})
    void truncatedBlockFailsEveryBlock(String scheme) throws Exception {
        Map<String, Object> outcome = fetch(
                scheme,
                null,
                null,
                comm -> reply(
                        comm,
                        List.of(
                                new BlockFetchProtocol.Entry(BlockFetchProtocol.OK, 3, null),
                                new BlockFetchProtocol.Entry(BlockFetchProtocol.OK, 100, null)),
                        new byte[] {1, 2, 3},
                        new byte[50]));
        for (String id : List.of("a", "b")) {
            Throwable failure = assertInstanceOf(CommProtocolException.class, outcome.get(id));
            assertTrue(failure.getMessage().contains("truncated"), failure.getMessage());
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "ucx"})
    void silentServerTimesOut(String scheme) throws Exception {
        long start = System.nanoTime();
        Map<String, Object> outcome = fetch(scheme, null, null, comm -> {});
        assertInstanceOf(CommTimeoutException.class, outcome.get("a"));
        assertInstanceOf(CommTimeoutException.class, outcome.get("b"));
        assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(30), "took too long");
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "ucx"})
    void deadPeerFailsAfterTheRetries(String scheme) throws Exception {
        requireTransport(scheme);
        URI address;
        try (CommListener gone = context.listen(URI.create(scheme + "://127.0.0.1:0"), Comm::abort, options(null))) {
            address = gone.address();
        }
        Map<String, Object> outcome = fetchFrom(address, options(null));
        assertInstanceOf(CommException.class, outcome.get("a"));
        assertInstanceOf(CommException.class, outcome.get("b"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "ucx"})
    void serverThatDiesMidReplyFailsTheFetch(String scheme) throws Exception {
        Map<String, Object> outcome = fetch(scheme, null, null, Comm::abort);
        assertInstanceOf(CommClosedException.class, outcome.get("a"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "ucx"})
    void wrongSecretIsRefused(String scheme) throws Exception {
        Map<String, Object> outcome = fetch(scheme, "the-server-secret", "the-client-secret", comm -> {});
        assertInstanceOf(CommAuthenticationException.class, outcome.get("a"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp"})
    void driverLookupFailureFailsEveryBlock(String scheme) throws Exception {
        // The driver's registry is Scala: askSync throws SparkException, a checked exception, undeclared.
        PeerDirectory unreachableDriver = new PeerDirectory() {
            @Override
            public URI lookup(String executorId) {
                throw UcxBlockStoreClientTest.<RuntimeException>sneakyThrow(
                        new org.apache.spark.SparkException("the driver did not answer"));
            }

            @Override
            public void reportFetched(String executorId, long bytes) {}
        };
        Map<String, Object> outcome =
                fetchFrom(URI.create(scheme + "://127.0.0.1:1"), options(null), unreachableDriver, null);
        for (String id : List.of("a", "b")) {
            Throwable failure = assertInstanceOf(org.apache.spark.SparkException.class, outcome.get(id));
            assertTrue(failure.getMessage().contains("did not answer"), failure.getMessage());
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "ucx"})
    void listenerThatThrowsStillGetsEveryBlockOnce(String scheme) throws Exception {
        Map<String, Object> outcome = fetch(scheme, null, null, UcxBlockStoreClientTest::serveTwoBlocks, "a");
        // "a" was delivered (the listener threw after taking it): it must not also fail, and "b" still comes.
        assertEquals("1,2,3", outcome.get("a"));
        assertEquals("4,5,6,7,8", outcome.get("b"));
    }

    /** Serves "a" as 1,2,3 and "b" as 4,5,6,7,8. */
    private static void serveTwoBlocks(Comm comm) {
        reply(
                comm,
                List.of(
                        new BlockFetchProtocol.Entry(BlockFetchProtocol.OK, 3, null),
                        new BlockFetchProtocol.Entry(BlockFetchProtocol.OK, 5, null)),
                new byte[] {1, 2, 3},
                new byte[] {4, 5, 6, 7, 8});
    }

    @SuppressWarnings("unchecked")
    private static <T extends Throwable> T sneakyThrow(Throwable t) throws T {
        throw (T) t;
    }

    private static void requireTransport(String scheme) {
        if (scheme.equals("ucx")) {
            Requirements.assumeUcx();
        }
    }

    /** Serves with {@code behaviour} (called with the comm after reading one request), fetches "a" and "b". */
    private Map<String, Object> fetch(String scheme, String serverSecret, String clientSecret, Consumer<Comm> behaviour)
            throws Exception {
        return fetch(scheme, serverSecret, clientSecret, behaviour, null);
    }

    /** As above; Spark's listener throws after taking block {@code throwOn}. */
    private Map<String, Object> fetch(
            String scheme, String serverSecret, String clientSecret, Consumer<Comm> behaviour, String throwOn)
            throws Exception {
        requireTransport(scheme);
        try (CommListener server = context.listen(
                URI.create(scheme + "://127.0.0.1:0"),
                comm -> {
                    try (comm) {
                        comm.read().close();
                        behaviour.accept(comm);
                        comm.read().close(); // until the client goes
                    } catch (CommException e) {
                        // the client closed or gave up
                    }
                },
                options(serverSecret))) {
            return fetchFrom(server.address(), options(clientSecret), null, throwOn);
        }
    }

    private Map<String, Object> fetchFrom(URI address, CommOptions options) throws Exception {
        return fetchFrom(address, options, null, null);
    }

    /**
     * Fetches "a" and "b" from {@code address} (or where {@code directory} says, when given); the listener
     * throws after taking block {@code throwOn}. Fails if any block gets a second callback.
     */
    private Map<String, Object> fetchFrom(
            URI address, CommOptions options, PeerDirectory directoryOrNull, String throwOn) throws Exception {
        ShuffleTransportSettings settings = new ShuffleTransportSettings(
                address.getScheme(),
                address.getScheme(),
                null,
                options,
                Duration.ofSeconds(2),
                1 << 20,
                1,
                Duration.ofMillis(100),
                false,
                16,
                Duration.ofMinutes(1));
        PeerDirectory directory = directoryOrNull != null
                ? directoryOrNull
                : new PeerDirectory() {
                    @Override
                    public URI lookup(String executorId) {
                        return address;
                    }

                    @Override
                    public void reportFetched(String executorId, long bytes) {
                        reported.addAndGet(bytes);
                    }
                };
        Map<String, Object> outcome = new ConcurrentHashMap<>();
        List<String> twice = new CopyOnWriteArrayList<>();
        CompletableFuture<Void> done = new CompletableFuture<>();
        try (UcxBlockStoreClient client = new UcxBlockStoreClient(context, settings, directory, "test")) {
            client.fetchBlocks(
                    "127.0.0.1",
                    0,
                    "peer",
                    new String[] {"a", "b"},
                    new BlockFetchingListener() {
                        @Override
                        public void onBlockFetchSuccess(String blockId, ManagedBuffer data) {
                            try {
                                byte[] bytes = data.createInputStream().readAllBytes();
                                StringBuilder s = new StringBuilder();
                                for (byte b : bytes) {
                                    s.append(s.isEmpty() ? "" : ",").append(b);
                                }
                                settle(blockId, s.toString());
                            } catch (IOException e) {
                                settle(blockId, e);
                            }
                            if (blockId.equals(throwOn)) {
                                throw new IllegalStateException("the listener fails on " + blockId);
                            }
                        }

                        @Override
                        public void onBlockFetchFailure(String blockId, Throwable failure) {
                            settle(blockId, failure);
                        }

                        private void settle(String blockId, Object result) {
                            if (outcome.putIfAbsent(blockId, result) != null) {
                                twice.add(blockId + ": " + outcome.get(blockId) + ", then " + result);
                            }
                            if (outcome.size() == 2) {
                                done.complete(null);
                            }
                        }
                    },
                    null);
            done.get(60, TimeUnit.SECONDS);
        }
        assertEquals(List.of(), twice, "blocks that got a second callback");
        return outcome;
    }

    private static CommOptions options(String secret) {
        UcxConfig.Builder config = UcxConfig.builder();
        if (secret != null) {
            config.set(CommKeys.AUTH_SECRET, secret);
        }
        return CommOptions.builder().config(config.build()).build();
    }

    private static void reply(Comm comm, List<BlockFetchProtocol.Entry> entries, byte[]... blocks) {
        Frame[] frames = new Frame[blocks.length + 1];
        frames[0] = Frame.of(BlockFetchProtocol.encodeReply(entries));
        for (int i = 0; i < blocks.length; i++) {
            frames[i + 1] = Frame.of(blocks[i]);
        }
        comm.write(Message.of(frames));
    }
}
