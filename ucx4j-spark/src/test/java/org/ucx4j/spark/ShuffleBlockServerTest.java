package org.ucx4j.spark;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataOutputStream;
import java.io.File;
import java.io.FileOutputStream;
import java.io.RandomAccessFile;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import org.apache.spark.SparkConf;
import org.apache.spark.shuffle.IndexShuffleBlockResolver;
import org.apache.spark.shuffle.ShuffleBlockResolver;
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
import org.ucx4j.comm.CommKeys;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.Frame;
import org.ucx4j.comm.Message;
import org.ucx4j.testsupport.Requirements;
import scala.Option;

/**
 * The block server against requests as a hostile or unlucky client sends them, over {@code tcp://}: ids
 * that are not shuffle blocks (or not block ids at all), a block whose file is gone, many small blocks
 * (copied, and mapped past the heap budget), a mapped block larger than {@code maxBytesInFlight}, batch ids
 * whose range Spark's own resolver gives as negative, an id asked for twice, an oversized request, and a
 * client that stops reading its reply. Every request gets a reply entry per id, errors carry no server
 * paths, and the connection stays usable, or (oversized request, stalled reader) only that connection goes.
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
        try (ShuffleBlockServer server = tenByteBlocks(2_000, 1 << 20);
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
        int whole = (int) (3 * ShuffleBlockServer.MAP_AT_LEAST);
        try (ShuffleBlockServer server = tenByteBlocks(whole, 4096);
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

    @Test
    void negativeRangesAndRepeatedIdsAreRefusedWithoutMappingAnything() throws Exception {
        // Spark's own resolver over one map output of three partitions. A batch id whose start is after its
        // end gets a negative length from it (end offset - start offset): such a length once took one
        // permit for any number of mapped blocks (docs/SPARK.md, "Limits").
        writeMapOutput(MAP_AT_LEAST_PLUS_5, 10, 10);
        try (ShuffleBlockServer server = server(new DirResolver(dir), 1 << 20);
                Comm comm = context.connect(server.address(), options())) {
            String[] ids = {"shuffle_0_0_2_0", "shuffle_0_0_0", "shuffle_0_0_0", "shuffle_0_0_1", "shuffle_0_0_0_2"};
            Reply reply = request(comm, ids);
            assertEquals(BlockFetchProtocol.ERROR, reply.entries.get(0).status());
            assertTrue(
                    reply.entries.get(0).error().contains("negative range"),
                    reply.entries.get(0).error());
            assertEquals(BlockFetchProtocol.OK, reply.entries.get(1).status());
            assertEquals(MAP_AT_LEAST_PLUS_5, reply.entries.get(1).size());
            assertEquals(BlockFetchProtocol.ERROR, reply.entries.get(2).status());
            assertTrue(
                    reply.entries.get(2).error().contains("twice"),
                    reply.entries.get(2).error());
            assertEquals(10, reply.entries.get(3).size());
            // A batch id the right way round: partitions 0 and 1 as one block.
            assertEquals(MAP_AT_LEAST_PLUS_5 + 10, reply.entries.get(4).size());
            assertEquals(3, reply.blocks.size());
            // The connection still serves.
            assertEquals(
                    BlockFetchProtocol.OK,
                    request(comm, new String[] {"shuffle_0_0_2"}).entries.get(0).status());
        }
    }

    @Test
    void anOversizedRequestClosesOnlyItsConnection() throws Exception {
        try (ShuffleBlockServer server = tenByteBlocks(100, 1 << 20);
                Comm hostile = context.connect(server.address(), options());
                Comm other = context.connect(server.address(), options())) {
            // A well-formed request of the most ids, each longer than any block id, is larger than any
            // request may be: the server closes the connection before it copies the frame into its heap
            // (it would otherwise answer it, with an error for each id).
            String[] ids = new String[BlockFetchProtocol.MAX_BLOCKS];
            java.util.Arrays.fill(ids, "x".repeat(130));
            byte[] request = BlockFetchProtocol.encodeRequest(ids);
            assertTrue(request.length > BlockFetchProtocol.MAX_REQUEST_BYTES, request.length + " bytes");
            hostile.write(Message.ofBytes(request));
            assertThrows(CommClosedException.class, () -> hostile.read(Duration.ofSeconds(60)));
            assertArrayEquals(
                    bytes(10, 20),
                    request(other, new String[] {"shuffle_0_0_2"}).blocks.get(0));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "ucx"})
    void aPeerThatStopsTakingItsReplyLosesItsConnectionAndOthersAreServed(String scheme) throws Exception {
        if (scheme.equals("ucx")) {
            Requirements.assumeUcx();
        }
        // Partition 0 is 64 MiB (more than maxBytesInFlight: it goes alone, holding every permit).
        writeMapOutput(64L << 20, 10, 256 << 10);
        Duration timeout = Duration.ofSeconds(2);
        try (ShuffleBlockServer server = server(new DirResolver(dir), 8 << 20, scheme, timeout);
                Comm hostile = context.connect(server.address(), stingy());
                Comm victim = context.connect(server.address(), options())) {
            // A receive budget of one byte: the first reply is read ahead, the second stays in the comm's
            // pipeline, and the 64 MiB one is never taken. Before the reply timeout existed, its permits
            // (all of them) and those of the second stayed held for as long as the connection lived, and
            // every other peer's requests waited for them.
            for (String id : new String[] {"shuffle_0_0_1", "shuffle_0_0_2", "shuffle_0_0_0"}) {
                hostile.write(Message.ofBytes(BlockFetchProtocol.encodeRequest(new String[] {id})));
            }
            await("the server aborts the connection whose replies are not taken")
                    .atMost(Duration.ofSeconds(60))
                    .until(() -> server.connectionsOf("stingy") == 0);
            Reply reply = request(victim, new String[] {"shuffle_0_0_1"});
            assertEquals(10, reply.entries.get(0).size());
        }
    }

    @Test
    void aPeerThatMisbehavesOnEveryConnectionFillsNoLog() throws Exception {
        Path data = dir.resolve("shuffle_0_0_0.data");
        Files.write(data, bytes(100, 0));
        Queue<String> warnings = new ConcurrentLinkedQueue<>();
        int connections = 60;
        try (ShuffleBlockServer server = new ShuffleBlockServer(
                context,
                "127.0.0.1",
                settings("tcp", 1 << 20, Duration.ofSeconds(30)),
                new TenByteBlocks(data.toFile(), dir.resolve("gone.data").toFile()),
                warnings::add)) {
            // Each connection sends a request of two frames (a request has one) and is closed by the server;
            // before, each wrote its own WARN line.
            for (int i = 0; i < connections; i++) {
                try (Comm hostile = context.connect(server.address(), options())) {
                    hostile.write(Message.of(
                            Frame.host(MemorySegment.ofArray(new byte[8])),
                            Frame.host(MemorySegment.ofArray(new byte[8]))));
                    assertThrows(CommClosedException.class, () -> hostile.read(Duration.ofSeconds(60)));
                }
            }
            List<String> lines = List.copyOf(warnings);
            assertTrue(lines.size() <= 6, lines.size() + " lines for " + connections + " bad connections: " + lines);
            assertTrue(!lines.isEmpty() && lines.get(0).contains("has 2 frames, not 1: closing"), lines.toString());
            // And the server still serves a well-behaved peer.
            try (Comm comm = context.connect(server.address(), options())) {
                assertArrayEquals(
                        bytes(10, 20),
                        request(comm, new String[] {"shuffle_0_0_2"}).blocks.get(0));
            }
        }
    }

    private static final long MAP_AT_LEAST_PLUS_5 = ShuffleBlockServer.MAP_AT_LEAST + 5;

    /** Map 0 of shuffle 0 in {@link #dir}: partitions of the given sizes (a sparse data file) and its index. */
    private void writeMapOutput(long... sizes) throws Exception {
        long total = 0;
        try (DataOutputStream index = new DataOutputStream(
                new FileOutputStream(dir.resolve("shuffle_0_0_0.index").toFile()))) {
            index.writeLong(0);
            for (long size : sizes) {
                total += size;
                index.writeLong(total);
            }
        }
        try (RandomAccessFile data =
                new RandomAccessFile(dir.resolve("shuffle_0_0_0.data").toFile(), "rw")) {
            data.setLength(total);
        }
    }

    /** Spark's own resolver; only where its files are is changed (no block manager needed). */
    private static final class DirResolver extends IndexShuffleBlockResolver {
        private final Path dir;

        DirResolver(Path dir) {
            super(new SparkConf());
            this.dir = dir;
        }

        @Override
        public File getIndexFile(int shuffleId, long mapId, Option<String[]> dirs) {
            return dir.resolve("shuffle_" + shuffleId + "_" + mapId + "_0.index")
                    .toFile();
        }

        @Override
        public File getDataFile(int shuffleId, long mapId, Option<String[]> dirs) {
            return dir.resolve("shuffle_" + shuffleId + "_" + mapId + "_0.data").toFile();
        }
    }

    /** A client whose comm takes one byte ahead at most, under the identity "stingy". */
    private static CommOptions stingy() {
        return CommOptions.builder()
                .config(UcxConfig.builder().set(CommKeys.MAX_IN_FLIGHT, 1L).build())
                .identity("stingy")
                .build();
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

    /** A server of {@link TenByteBlocks} over a data file of {@code fileBytes} bytes counting up from 0. */
    private ShuffleBlockServer tenByteBlocks(int fileBytes, long maxBytesInFlight) throws Exception {
        Path data = dir.resolve("shuffle_0_0_0.data");
        Files.write(data, bytes(fileBytes, 0));
        return server(new TenByteBlocks(data.toFile(), dir.resolve("gone.data").toFile()), maxBytesInFlight);
    }

    private ShuffleBlockServer server(ShuffleBlockResolver resolver, long maxBytesInFlight) {
        return server(resolver, maxBytesInFlight, "tcp", Duration.ofSeconds(30));
    }

    private ShuffleBlockServer server(
            ShuffleBlockResolver resolver, long maxBytesInFlight, String scheme, Duration replyTimeout) {
        return new ShuffleBlockServer(context, "127.0.0.1", settings(scheme, maxBytesInFlight, replyTimeout), resolver);
    }

    private static ShuffleTransportSettings settings(String scheme, long maxBytesInFlight, Duration replyTimeout) {
        return new ShuffleTransportSettings(
                scheme,
                scheme,
                null,
                options(),
                replyTimeout,
                maxBytesInFlight,
                0,
                Duration.ZERO,
                false,
                16,
                Duration.ofMinutes(1));
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
