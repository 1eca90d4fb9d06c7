package org.ucx4j.spark;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.network.buffer.ManagedBuffer;
import org.apache.spark.network.shuffle.BlockFetchingListener;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.ucx4j.UcxConfig;
import org.ucx4j.comm.Comm;
import org.ucx4j.comm.CommClosedException;
import org.ucx4j.comm.CommContext;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.Message;
import org.ucx4j.testsupport.Requirements;

/**
 * Connections between the fetcher and the block server: a client keeps at most
 * {@code maxConnectionsPerPeer} to a peer and closes those unused for {@code idleTimeout}; a server closes
 * a peer's longest-idle connection when the peer opens one more than the cap, and connections that send
 * nothing for twice the timeout; a client whose kept connection was closed meanwhile reconnects without
 * the fetch failing or waiting for a retry.
 */
@Tag("spark")
@Tag("native")
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class ShuffleConnectionsTest {
    @TempDir
    Path dir;

    private final CommContext context = CommContext.create();

    @AfterEach
    void close() {
        context.close();
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "ucx"})
    void clientClosesIdleConnectionsAndReconnects(String scheme) throws Exception {
        requireTransport(scheme);
        try (ShuffleBlockServer server = server(scheme, 16, Duration.ofMinutes(1));
                UcxBlockStoreClient client = client(server.address(), 16, Duration.ofMillis(300))) {
            assertEquals("0,1,2,3,4,5,6,7,8,9", fetch(client, "shuffle_0_0_0").get("shuffle_0_0_0"));
            assertEquals(1, client.idleConnections(server.address()), "the connection is kept");
            await("the client closes its idle connection")
                    .atMost(Duration.ofSeconds(30))
                    .until(() -> client.idleConnections(server.address()) == 0);
            await("the server sees it closed")
                    .atMost(Duration.ofSeconds(30))
                    .until(() -> server.connectionsOf("fetcher") == 0);
            assertEquals(
                    "10,11,12,13,14,15,16,17,18,19",
                    fetch(client, "shuffle_0_0_1").get("shuffle_0_0_1"));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "ucx"})
    void aKeptConnectionTheServerClosedIsReplacedWithoutARetry(String scheme) throws Exception {
        requireTransport(scheme);
        // The server closes connections idle for 2 x 1 s (long enough for a loaded machine to send a
        // fresh connection's request); the client would keep them a minute, and a retry would wait 5
        // minutes (longer than this test may run): only a transparent reconnect passes.
        try (ShuffleBlockServer server = server(scheme, 16, Duration.ofSeconds(1));
                UcxBlockStoreClient client = client(server.address(), 16, Duration.ofMinutes(1))) {
            assertEquals("0,1,2,3,4,5,6,7,8,9", fetch(client, "shuffle_0_0_0").get("shuffle_0_0_0"));
            await("the server closes the idle connection")
                    .atMost(Duration.ofSeconds(30))
                    .until(() -> server.connectionsOf("fetcher") == 0);
            assertEquals(1, client.idleConnections(server.address()), "the client still keeps it");
            long start = System.nanoTime();
            assertEquals(
                    "20,21,22,23,24,25,26,27,28,29",
                    fetch(client, "shuffle_0_0_2").get("shuffle_0_0_2"));
            assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(60), "reconnecting waited for a retry");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "ucx"})
    void aClientNeverHoldsMoreThanItsCap(String scheme) throws Exception {
        requireTransport(scheme);
        AtomicInteger most = new AtomicInteger();
        try (ShuffleBlockServer server = server(scheme, 16, Duration.ofMinutes(1));
                UcxBlockStoreClient client = client(server.address(), 2, Duration.ofMinutes(1))) {
            // Twenty fetches at once, each its own request: they share at most two connections, which the
            // server (whose own cap is 16) counts while they run.
            Map<String, Object> got = new ConcurrentHashMap<>();
            CompletableFuture<Void> all = new CompletableFuture<>();
            Thread watch = Thread.ofVirtual().start(() -> {
                while (!all.isDone()) {
                    most.accumulateAndGet(server.connectionsOf("fetcher"), Math::max);
                    Thread.onSpinWait();
                }
            });
            for (int r = 0; r < 20; r++) {
                client.fetchBlocks(
                        "127.0.0.1", 0, "peer", new String[] {"shuffle_0_0_" + r}, collect(got, 20, all), null);
            }
            all.get(60, TimeUnit.SECONDS);
            watch.join();
            for (int r = 0; r < 20; r++) {
                assertEquals(expected(r), got.get("shuffle_0_0_" + r), "block " + r);
            }
            assertTrue(most.get() >= 1 && most.get() <= 2, most.get() + " connections seen at once");
            assertTrue(client.idleConnections(server.address()) <= 2);
        }
    }

    @Test
    void aServerClosesAPeersLongestIdleConnectionBeyondItsCap() throws Exception {
        try (ShuffleBlockServer server = server("tcp", 2, Duration.ofMinutes(1));
                Comm first = context.connect(server.address(), options("greedy"));
                Comm second = context.connect(server.address(), options("greedy"))) {
            assertArrayEquals(block(0), request(first, "shuffle_0_0_0"));
            assertArrayEquals(block(1), request(second, "shuffle_0_0_1"));
            // Both replies were read here; the server marks a connection idle when its reply's write
            // completes, which may come later on a loaded machine (a busy one is never evicted).
            await("the server sees both connections idle")
                    .atMost(Duration.ofSeconds(30))
                    .until(() -> server.idleConnectionsOf("greedy") == 2);
            try (Comm third = context.connect(server.address(), options("greedy"))) {
                assertArrayEquals(block(2), request(third, "shuffle_0_0_2"));
                assertThrows(CommClosedException.class, () -> first.read(Duration.ofSeconds(30)));
                assertEquals(2, server.connectionsOf("greedy"));
                assertArrayEquals(block(3), request(second, "shuffle_0_0_3"));
                // Another peer has its own cap.
                try (Comm other = context.connect(server.address(), options("modest"))) {
                    assertArrayEquals(block(4), request(other, "shuffle_0_0_4"));
                    assertEquals(2, server.connectionsOf("greedy"));
                }
            }
        }
    }

    @Test
    void aServerClosesConnectionsThatStayIdle() throws Exception {
        try (ShuffleBlockServer server = server("tcp", 16, Duration.ofMillis(200))) {
            // Timed from before the connect: the server's idle clock starts when it accepts, which is
            // before connect() returns (the handshake), so a start taken after it could be late.
            long start = System.nanoTime();
            try (Comm silent = context.connect(server.address(), options("silent"))) {
                assertThrows(CommClosedException.class, () -> silent.read(Duration.ofSeconds(30)));
                assertTrue(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(400), "closed before 2 x 200 ms");
                await().atMost(Duration.ofSeconds(30)).until(() -> server.connectionsOf("silent") == 0);
            }
        }
    }

    private static String expected(int reduceId) {
        StringBuilder s = new StringBuilder();
        for (byte b : block(reduceId)) {
            s.append(s.isEmpty() ? "" : ",").append(b);
        }
        return s.toString();
    }

    /** Block r of map 0: bytes r*10 .. r*10+9. */
    private static byte[] block(int reduceId) {
        byte[] b = new byte[10];
        for (int i = 0; i < 10; i++) {
            b[i] = (byte) (reduceId * 10 + i);
        }
        return b;
    }

    private static byte[] request(Comm comm, String id) {
        comm.write(Message.ofBytes(BlockFetchProtocol.encodeRequest(new String[] {id})));
        try (Message m = comm.read(Duration.ofSeconds(30))) {
            assertEquals(2, m.frameCount(), "header and one block");
            return m.frame(1).toByteArray();
        }
    }

    private ShuffleBlockServer server(String scheme, int maxPerPeer, Duration idleTimeout) throws IOException {
        byte[] data = new byte[1_000];
        for (int i = 0; i < data.length; i++) {
            data[i] = (byte) i;
        }
        Path file = dir.resolve("shuffle_0_0_0.data");
        Files.write(file, data);
        return new ShuffleBlockServer(
                context,
                "127.0.0.1",
                settings(scheme, options("server"), maxPerPeer, idleTimeout),
                new TenByteBlocks(file.toFile(), dir.resolve("gone.data").toFile()));
    }

    private UcxBlockStoreClient client(URI address, int maxPerPeer, Duration idleTimeout) {
        PeerDirectory directory = new PeerDirectory() {
            @Override
            public URI lookup(String executorId) {
                return address;
            }

            @Override
            public void reportFetched(String executorId, long bytes) {}
        };
        return new UcxBlockStoreClient(
                context, settings(address.getScheme(), options("fetcher"), maxPerPeer, idleTimeout), directory, "test");
    }

    private static ShuffleTransportSettings settings(
            String scheme, CommOptions options, int maxPerPeer, Duration idleTimeout) {
        // A retry waits 5 minutes: a test that passes did not retry.
        return new ShuffleTransportSettings(
                scheme,
                scheme,
                null,
                options,
                Duration.ofSeconds(30),
                1 << 20,
                1,
                Duration.ofMinutes(5),
                false,
                maxPerPeer,
                idleTimeout);
    }

    private static Map<String, Object> fetch(UcxBlockStoreClient client, String id) throws Exception {
        Map<String, Object> got = new ConcurrentHashMap<>();
        CompletableFuture<Void> done = new CompletableFuture<>();
        client.fetchBlocks("127.0.0.1", 0, "peer", new String[] {id}, collect(got, 1, done), null);
        done.get(90, TimeUnit.SECONDS);
        if (got.get(id) instanceof Throwable t) {
            throw new AssertionError("block " + id + " failed", t);
        }
        return got;
    }

    /** A listener putting each block's bytes (or its failure) into {@code got}; completes after {@code n}. */
    private static BlockFetchingListener collect(Map<String, Object> got, int n, CompletableFuture<Void> done) {
        return new BlockFetchingListener() {
            @Override
            public void onBlockFetchSuccess(String blockId, ManagedBuffer data) {
                try {
                    StringBuilder s = new StringBuilder();
                    for (byte b : data.createInputStream().readAllBytes()) {
                        s.append(s.isEmpty() ? "" : ",").append(b);
                    }
                    settle(blockId, s.toString());
                } catch (IOException e) {
                    settle(blockId, e);
                }
            }

            @Override
            public void onBlockFetchFailure(String blockId, Throwable failure) {
                settle(blockId, failure);
            }

            private void settle(String blockId, Object result) {
                got.put(blockId, result);
                if (got.size() == n) {
                    done.complete(null);
                }
            }
        };
    }

    private static CommOptions options(String identity) {
        return CommOptions.builder()
                .config(UcxConfig.builder().build())
                .identity(identity)
                .build();
    }

    private static void requireTransport(String scheme) {
        if (scheme.equals("ucx")) {
            Requirements.assumeUcx();
        }
    }
}
