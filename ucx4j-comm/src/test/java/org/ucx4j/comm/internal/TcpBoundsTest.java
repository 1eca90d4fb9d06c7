package org.ucx4j.comm.internal;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ucx4j.UcxConfig;
import org.ucx4j.comm.CommException;
import org.ucx4j.comm.CommKeys;
import org.ucx4j.comm.CommListener;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.Comms;
import org.ucx4j.comm.FrameAllocator;
import org.ucx4j.comm.Message;
import org.ucx4j.testsupport.RunningJvm;

/**
 * {@code tcp://} bounds: idle comms hold no platform thread each, and what the comms of one listener
 * receive at once stays within {@code max-in-flight-per-listener}, however many peers send.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class TcpBoundsTest {
    static final long MIB = 1 << 20;
    /** What a second round of idle comms may leave above the first (malloc's own caches). */
    static final long SECOND_ROUND_SLACK = 16 * MIB;

    static int fds() throws Exception {
        try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
            return (int) s.count();
        }
    }

    static long rss() throws Exception {
        return HostileInputTest.rssBytes();
    }

    /** The process's OS threads: platform threads, the JVM's own, and UCX's; virtual threads are not. */
    static int osThreads() throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("Threads:")) {
                return Integer.parseInt(line.replaceAll("\\D", ""));
            }
        }
        throw new IllegalStateException("no Threads: in /proc/self/status");
    }

    @Test
    void fiveHundredIdleCommsDoNotCostAPlatformThreadEachAndEverythingComesBackAfterClosing() throws Exception {
        int n = 500;
        try (RunningJvm child = IdleTcpCommsMain.start(n)) {
            Duration t = Duration.ofSeconds(120);
            IdleTcpCommsMain.Stats base = IdleTcpCommsMain.Stats.parse(child.awaitLine("BASE", t));
            IdleTcpCommsMain.Stats open = IdleTcpCommsMain.Stats.parse(child.awaitLine("OPEN", t));
            IdleTcpCommsMain.Stats closed = IdleTcpCommsMain.Stats.parse(child.awaitLine("CLOSED", t));
            IdleTcpCommsMain.Stats again = IdleTcpCommsMain.Stats.parse(child.awaitLine("AGAIN", t));
            System.out.printf(
                    "%d idle tcp:// comms (both ends in one JVM, heap fixed): OS threads %d -> %d -> %d, fds %d ->"
                            + " %d -> %d, RSS %d -> %d -> %d MiB (closed), %d MiB (a second round closed)%n",
                    n,
                    base.threads(),
                    open.threads(),
                    closed.threads(),
                    base.fds(),
                    open.fds(),
                    closed.fds(),
                    base.rss() / MIB,
                    open.rss() / MIB,
                    closed.rss() / MIB,
                    again.rss() / MIB);
            assertTrue(
                    open.threads() - base.threads() < 50,
                    "OS threads grew from " + base.threads() + " to " + open.threads() + " for " + n + " idle comms");
            // 2n socket ends; a few descriptors counted in BASE (left by the warm-up round) may have closed
            // since: CI saw 1,028 open against a base of 29+ (it had passed with a base of 27).
            assertTrue(
                    open.fds() >= base.fds() + 2 * n - 8,
                    "the comms were open: fds " + base.fds() + " -> " + open.fds());
            // fds and threads: the child waited for them to come back (CLOSED and AGAIN say so).
            assertTrue(again.fds() <= base.fds() + 4 && again.threads() <= base.threads() + 4, again.toString());
            // Memory: the first round also loads and compiles code (metaspace, code cache); a second round
            // must not add to what the first left. Before, each comm end's 64 KiB direct read buffer
            // stayed until a collection: 64 MiB a round.
            assertTrue(
                    again.rss() <= closed.rss() + SECOND_ROUND_SLACK,
                    "RSS after a second round " + again.rss() / MIB + " MiB, after the first " + closed.rss() / MIB);
            assertTrue(
                    closed.rss() <= base.rss() + 80 * MIB,
                    "RSS after closing " + closed.rss() / MIB + " MiB, before " + base.rss() / MIB);
            assertEquals(0, child.waitFor(Duration.ofSeconds(60)));
        }
    }

    @Test
    void aListenersCommsReceiveAtMostItsInFlightBytesAtOnce() throws Exception {
        AtomicInteger allocated = new AtomicInteger();
        CommOptions o = CommOptions.builder()
                .config(UcxConfig.builder()
                        .set(CommKeys.MAX_IN_FLIGHT_PER_LISTENER, 16 * MIB)
                        .build())
                .connectTimeout(Duration.ofSeconds(10))
                .allocator((kind, size, scope) -> {
                    allocated.incrementAndGet();
                    return FrameAllocator.host().allocate(kind, size, scope);
                })
                .build();
        List<SocketChannel> peers = new ArrayList<>();
        CompletableFuture<Long> firstMessage = new CompletableFuture<>();
        try (CommListener l = Comms.listen(
                URI.create("tcp://127.0.0.1:0"),
                comm -> {
                    try (comm;
                            Message m = comm.read()) {
                        firstMessage.complete(m.byteSize());
                    } catch (CommException e) {
                        // the raw peer left
                    }
                },
                o)) {
            // Twenty raw peers each announce a message of one 8 MiB frame and send its first 64 KiB (what
            // a socket buffer takes without a reader): with 16 MiB for the listener, two of them may have
            // their frame allocated, the others wait.
            long start = 64 * 1024;
            for (int i = 0; i < 20; i++) {
                SocketChannel ch = SocketChannel.open(
                        new InetSocketAddress("127.0.0.1", l.address().getPort()));
                peers.add(ch);
                Handshake.client(
                        new StreamHandshakeChannel(ch), o, 0, l.address().toString(), null);
                ch.write(ByteBuffer.wrap(header(8 * MIB)));
                writeFully(ch, start);
            }
            await("two peers' frames allocated").atMost(Duration.ofSeconds(30)).until(() -> allocated.get() == 2);
            // Absence needs a window: were the bound missing, the other 18 would be allocated within
            // milliseconds of their headers, which all arrived before the two above were.
            await("no more than two frames allocated while none is complete")
                    .during(Duration.ofSeconds(1))
                    .atMost(Duration.ofSeconds(5))
                    .until(() -> allocated.get() == 2);
            assertFalse(firstMessage.isDone());
            // Completing the peers' frames lets the rest in, one budget's worth at a time.
            for (SocketChannel ch : peers) {
                Thread.ofVirtual().start(() -> {
                    try {
                        writeFully(ch, 8 * MIB - start);
                    } catch (java.io.IOException e) {
                        // the test fails on the allocation count below
                    }
                });
            }
            await("every peer's frame allocated").atMost(Duration.ofSeconds(60)).until(() -> allocated.get() == 20);
            assertEquals(8 * MIB, firstMessage.get(30, TimeUnit.SECONDS));
        } finally {
            for (SocketChannel ch : peers) {
                ch.close();
            }
        }
    }

    /** Writes {@code bytes} zero bytes. */
    static void writeFully(SocketChannel ch, long bytes) throws java.io.IOException {
        ByteBuffer zeros = ByteBuffer.allocate(64 * 1024);
        for (long left = bytes; left > 0; ) {
            zeros.clear().limit((int) Math.min(zeros.capacity(), left));
            left -= ch.write(zeros);
        }
    }

    /** A message header and a frame table of one host frame. */
    static byte[] header(long frameSize) {
        return HostileInputTest.header(WireFormat.MAGIC, WireFormat.VERSION, WireFormat.TYPE_MESSAGE, 0, 1, frameSize);
    }
}
