package org.ucx4j.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.spark.shuffle.ShuffleBlockResolver;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.ucx4j.UcxConfig;
import org.ucx4j.comm.Comm;
import org.ucx4j.comm.CommContext;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.Message;

/**
 * The block server against requests as a hostile or unlucky client sends them, over {@code tcp://}: ids
 * that are not shuffle blocks (or not block ids at all), a block whose file is gone, many small blocks
 * (copied), and a mapped block larger than {@code maxBytesInFlight}. Every request gets a reply entry per id, errors carry
 * no server paths, and the connection stays usable.
 */
@Tag("spark")
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class ShuffleBlockServerTest {
    @TempDir
    Path dir;

    private final CommContext context = CommContext.create();

    @AfterEach
    void close() {
        context.close();
    }

    @Test
    void hostileAndMissingIdsGetShortErrorsAndTheConnectionStays() throws Exception {
        Path data = dir.resolve("shuffle_0_0_0.data");
        Files.write(data, bytes(2_000, 0));
        try (ShuffleBlockServer server = server(
                        new TenByteBlocks(
                                data.toFile(), dir.resolve("gone.data").toFile()),
                        1 << 20);
                Comm comm = context.connect(server.address(), options())) {
            String[] ids = {"../../etc/passwd", "rdd_1_2", "", "shuffle_0_9_0", "shuffle_0_0_3"};
            Reply reply = request(comm, ids);
            assertEquals(5, reply.entries.size());
            for (int i = 0; i < 4; i++) {
                BlockFetchProtocol.Entry e = reply.entries.get(i);
                assertEquals(BlockFetchProtocol.ERROR, e.status(), ids[i]);
                assertFalse(e.error().contains(dir.toString()), "leaks a server path: " + e.error());
                assertFalse(e.error().contains("gone.data"), "leaks a server path: " + e.error());
            }
            assertTrue(
                    reply.entries.get(1).error().contains("not a shuffle block"),
                    reply.entries.get(1).error());
            assertEquals(BlockFetchProtocol.OK, reply.entries.get(4).status());
            assertArrayEquals(bytes(10, 30), reply.blocks.get(0));
            // The connection still serves.
            assertArrayEquals(
                    bytes(10, 40),
                    request(comm, new String[] {"shuffle_0_0_4"}).blocks.get(0));
        }
    }

    @Test
    void manySmallBlocksAndOneLargerThanTheBytesInFlightBound() throws Exception {
        Path data = dir.resolve("shuffle_0_0_0.data");
        int whole = (int) (3 * ShuffleBlockServer.MAP_AT_LEAST);
        Files.write(data, bytes(whole, 0));
        try (ShuffleBlockServer server = server(
                        new TenByteBlocks(
                                data.toFile(), dir.resolve("gone.data").toFile()),
                        4096);
                Comm comm = context.connect(server.address(), options())) {
            String[] ids = new String[1_000];
            for (int r = 0; r < ids.length; r++) {
                ids[r] = "shuffle_0_0_" + r;
            }
            Reply reply = request(comm, ids);
            assertEquals(1_000, reply.blocks.size());
            for (int r = 0; r < ids.length; r++) {
                assertArrayEquals(bytes(10, r * 10), reply.blocks.get(r), ids[r]);
            }
            // The whole file in one block (mapped, not copied), far more than maxBytesInFlight: goes alone, whole.
            assertArrayEquals(
                    bytes(whole, 0),
                    request(comm, new String[] {"shuffle_0_0_999999"}).blocks.get(0));
        }
    }

    private record Reply(List<BlockFetchProtocol.Entry> entries, List<byte[]> blocks) {}

    private static Reply request(Comm comm, String[] ids) {
        comm.write(Message.ofBytes(BlockFetchProtocol.encodeRequest(ids)));
        try (Message m = comm.read(Duration.ofSeconds(60))) {
            List<BlockFetchProtocol.Entry> entries =
                    BlockFetchProtocol.decodeReply(m.frame(0).toByteArray(), ids.length);
            List<byte[]> blocks = new ArrayList<>();
            for (int f = 1; f < m.frameCount(); f++) {
                blocks.add(m.frame(f).toByteArray());
            }
            return new Reply(entries, blocks);
        }
    }

    private ShuffleBlockServer server(ShuffleBlockResolver resolver, long maxBytesInFlight) {
        ShuffleTransportSettings settings = new ShuffleTransportSettings(
                "tcp",
                "tcp",
                null,
                options(),
                Duration.ofSeconds(30),
                maxBytesInFlight,
                0,
                Duration.ZERO,
                false,
                16,
                Duration.ofMinutes(1));
        return new ShuffleBlockServer(context, "127.0.0.1", settings, resolver);
    }

    private static CommOptions options() {
        return CommOptions.builder().config(UcxConfig.builder().build()).build();
    }

    /** {@code n} bytes counting up from {@code first} (mod 256). */
    private static byte[] bytes(int n, int first) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (first + i);
        }
        return b;
    }
}
