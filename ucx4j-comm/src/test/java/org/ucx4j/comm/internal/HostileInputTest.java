package org.ucx4j.comm.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ucx4j.UcxConfig;
import org.ucx4j.comm.Comm;
import org.ucx4j.comm.CommListener;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.CommProtocolException;
import org.ucx4j.comm.Comms;
import org.ucx4j.comm.FrameAllocator;
import org.ucx4j.comm.Message;

/**
 * Hostile bytes on a raw connection to a listener: each is refused with a clear error, nothing of what
 * a header claims is allocated (the process's resident memory stays put), and the listener keeps
 * serving. Subclasses speak the raw transport.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
abstract class HostileInputTest {
    /** A raw connection: bytes before any handshake, or records and headers after it. */
    interface Raw extends AutoCloseable {
        /** Sends bytes where the handshake is expected. */
        void sendHandshakeBytes(byte[] bytes) throws Exception;

        /** Runs a correct client handshake. */
        void handshake(CommOptions options) throws Exception;

        /** After the handshake: sends bytes as a message header. */
        void sendHeader(byte[] bytes) throws Exception;

        /** Receives the listener's next handshake record (blocks). */
        byte[] receiveRecord() throws Exception;
    }

    abstract String listenAddress();

    abstract Raw raw(URI listener) throws Exception;

    /** Frames of 1 MiB or more the listener's comms asked for; none of the hostile messages may get one. */
    final AtomicInteger largeFramesAllocated = new AtomicInteger();

    final CommOptions options = CommOptions.builder()
            .config(UcxConfig.builder().build())
            .connectTimeout(Duration.ofSeconds(5))
            .allocator((kind, size, scope) -> {
                if (size >= (1 << 20)) {
                    largeFramesAllocated.incrementAndGet();
                    // Never reserve what a hostile header claims, even when the check under test is missing.
                    throw new UnsupportedOperationException("test allocator: no frames of " + size + " bytes");
                }
                return FrameAllocator.host().allocate(kind, size, scope);
            })
            .build();
    final LinkedBlockingQueue<Throwable> readFailures = new LinkedBlockingQueue<>();
    CommListener listener;

    @BeforeEach
    void listen() {
        listener = Comms.listen(
                URI.create(listenAddress()),
                comm -> {
                    try (comm) {
                        while (true) {
                            try (Message m = comm.read()) {
                                comm.write(m);
                            }
                        }
                    } catch (RuntimeException e) {
                        readFailures.add(e);
                    }
                },
                options);
    }

    @AfterEach
    void close() {
        listener.close();
    }

    static byte[] header(int magic, int version, int type, int flags, long frames, long... sizes) {
        ByteBuffer b = ByteBuffer.allocate(16 + 16 * sizes.length).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(magic)
                .put((byte) version)
                .put((byte) type)
                .putShort((short) flags)
                .putLong(frames);
        for (long s : sizes) {
            b.putLong(s).putLong(0);
        }
        return b.array();
    }

    static long rssBytes() throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        return -1;
    }

    /** Sends a hostile header after a real handshake and checks the listener's comm refused it. */
    void refusedAfterHandshake(byte[] header, String expected) throws Exception {
        refusedAfterHandshake(expected, header);
    }

    /**
     * Sends a hostile header in parts (each a message on {@code ucx://}, back to back on {@code tcp://})
     * after a real handshake and checks the listener's comm refused it, allocated no large frame, and that
     * the listener still serves.
     */
    void refusedAfterHandshake(String expected, byte[]... parts) throws Exception {
        long before = rssBytes();
        try (Raw r = raw(listener.address())) {
            r.handshake(options);
            for (byte[] part : parts) {
                r.sendHeader(part);
            }
            Throwable t = readFailures.poll(30, TimeUnit.SECONDS);
            assertTrue(t instanceof CommProtocolException, "expected a protocol error, got " + t);
            assertTrue(t.getMessage().contains(expected), t.getMessage());
        }
        long grown = rssBytes() - before;
        assertTrue(grown < (64L << 20), "resident memory grew by " + grown + " bytes");
        assertEquals(0, largeFramesAllocated.get(), "frames of 1 MiB or more allocated for a refused message");
        stillServes();
    }

    /**
     * Waits (30 s at most) for the listener's answer to hostile handshake bytes: a VERDICT that refuses. Then
     * the listener has read and judged them, and the raw connection may close.
     */
    static Handshake.Verdict awaitRefusal(Raw r) throws Exception {
        byte[] record = within(Duration.ofSeconds(30), r::receiveRecord);
        assertTrue(
                record.length > 8 && record[6] == Handshake.VERDICT,
                "expected a VERDICT record, got " + record.length + " bytes of type "
                        + (record.length > 6 ? record[6] : -1));
        Handshake.Verdict verdict = Handshake.Verdict.of(record[8]);
        assertNotEquals(Handshake.Verdict.ACCEPTED, verdict, "the listener accepted hostile handshake bytes");
        return verdict;
    }

    /** Runs blocking work on a virtual thread and waits for it at most {@code limit}. */
    static <T> T within(Duration limit, java.util.concurrent.Callable<T> work) throws Exception {
        return CompletableFuture.supplyAsync(
                        () -> {
                            try {
                                return work.call();
                            } catch (Exception e) {
                                throw new CompletionException(e);
                            }
                        },
                        Thread::startVirtualThread)
                .get(limit.toNanos(), TimeUnit.NANOSECONDS);
    }

    /** A handshake record with its 4-byte little-endian length in front, as the channels send it. */
    static byte[] framed(byte[] record) {
        return ByteBuffer.allocate(4 + record.length)
                .order(ByteOrder.LITTLE_ENDIAN)
                .putInt(record.length)
                .put(record)
                .array();
    }

    void stillServes() {
        try (Comm c = Comms.connect(listener.address(), options)) {
            c.write(Message.ofBytes(new byte[] {42}));
            try (Message m = c.read(Duration.ofSeconds(10))) {
                assertEquals(42, m.frame(0).toByteArray()[0]);
            }
        }
    }

    @Test
    void garbageInsteadOfAHandshake() throws Exception {
        try (Raw r = raw(listener.address())) {
            byte[] junk = new byte[300];
            new java.util.Random(1).nextBytes(junk);
            junk[0] = 100; // a small length prefix: the record is read, then refused for its magic
            junk[1] = junk[2] = junk[3] = 0;
            r.sendHandshakeBytes(junk);
            awaitRefusal(r);
        }
        stillServes();
    }

    @Test
    void handshakeClaimingAHugeRecord() throws Exception {
        long before = rssBytes();
        try (Raw r = raw(listener.address())) {
            r.sendHandshakeBytes(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0x7f});
            awaitRefusal(r);
        }
        assertTrue(rssBytes() - before < (64L << 20));
        stillServes();
    }

    @Test
    void wrongHandshakeVersion() throws Exception {
        byte[] hello = Handshake.hello(false, new byte[32], 1, "x", "y", null);
        hello[4] = 9; // version 9
        try (Raw r = raw(listener.address())) {
            r.sendHandshakeBytes(framed(hello));
            awaitRefusal(r);
        }
        stillServes();
    }

    @Test
    void aBadProofGetsARefusingVerdict() throws Exception {
        try (Raw r = raw(listener.address())) {
            r.sendHandshakeBytes(framed(Handshake.hello(false, new byte[32], 1, "x", "y", null)));
            assertEquals(Handshake.HELLO, r.receiveRecord()[6]);
            assertEquals(Handshake.PROOF, r.receiveRecord()[6]);
            // A 32-byte MAC where the listener, having no secret, expects an empty proof.
            r.sendHandshakeBytes(framed(Handshake.proof(new byte[Handshake.MAC_BYTES])));
            assertEquals(Handshake.Verdict.REFUSED_AUTH, awaitRefusal(r));
        }
        stillServes();
    }

    @Test
    void headerClaiming2Pow40Frames() throws Exception {
        refusedAfterHandshake(header(WireFormat.MAGIC, 1, 0, 0, 1L << 40), "max-frames");
    }

    @Test
    void frameClaiming2Pow62Bytes() throws Exception {
        refusedAfterHandshake(header(WireFormat.MAGIC, 1, 0, 0, 1, 1L << 62), "max-frame-size");
    }

    @Test
    void theMostFramesOfLargeFramesAddingUpToMoreThanMaxMessageSize() throws Exception {
        long[] sizes = new long[options.maxFrames()];
        java.util.Arrays.fill(sizes, 16L << 30); // each within max-frame-size (64 GiB)
        byte[] whole = header(WireFormat.MAGIC, 1, 0, 0, sizes.length, sizes);
        // The fixed header, then the table: on ucx:// a table this large travels as a message of its own.
        byte[] fixed = java.util.Arrays.copyOf(whole, WireFormat.HEADER_BYTES);
        byte[] table = java.util.Arrays.copyOfRange(whole, WireFormat.HEADER_BYTES, whole.length);
        refusedAfterHandshake(
                sizes.length + " frames claims " + sizes.length * (16L << 30) + " bytes in all; max-message-size is "
                        + options.maxMessageSize(),
                fixed,
                table);
    }

    @Test
    void anAllocatorRefusingAFrameOfALargeTableFailsTheRead() throws Exception {
        long[] sizes = new long[1000]; // a 16,000-byte table: on ucx:// a message of its own
        java.util.Arrays.fill(sizes, 2L << 20); // 2 GB in all: within every limit, refused by the test allocator
        byte[] whole = header(WireFormat.MAGIC, 1, 0, 0, sizes.length, sizes);
        try (Raw r = raw(listener.address())) {
            r.handshake(options);
            r.sendHeader(java.util.Arrays.copyOf(whole, WireFormat.HEADER_BYTES));
            r.sendHeader(java.util.Arrays.copyOfRange(whole, WireFormat.HEADER_BYTES, whole.length));
            Throwable t = readFailures.poll(30, TimeUnit.SECONDS);
            assertTrue(t != null, "the listener's comm read never failed");
            assertTrue(t.getMessage().contains("test allocator: no frames of " + (2L << 20)), t.getMessage());
        }
        stillServes();
    }

    @Test
    void wrongMessageVersion() throws Exception {
        refusedAfterHandshake(header(WireFormat.MAGIC, 7, 0, 0, 0), "version 7");
    }

    @Test
    void badMagic() throws Exception {
        refusedAfterHandshake(header(0x12345678, 1, 0, 0, 0), "magic");
    }

    @Test
    void truncatedHeader() throws Exception {
        byte[] h = header(WireFormat.MAGIC, 1, 0, 0, 3, 10, 10, 10);
        byte[] cut = java.util.Arrays.copyOf(h, 16 + 20);
        long before = rssBytes();
        try (Raw r = raw(listener.address())) {
            r.handshake(options);
            r.sendHeader(cut);
        }
        Throwable t = readFailures.poll(30, TimeUnit.SECONDS);
        assertTrue(t != null, "the listener's comm did not fail");
        System.out.println(getClass().getSimpleName() + " truncated header: " + t);
        assertTrue(rssBytes() - before < (64L << 20));
        stillServes();
    }

    /** tcp:// hostile input on a raw socket. */
    static final class Tcp extends HostileInputTest {
        @Override
        String listenAddress() {
            return "tcp://127.0.0.1:0";
        }

        @Override
        Raw raw(URI l) throws Exception {
            SocketChannel ch = SocketChannel.open(new InetSocketAddress("127.0.0.1", l.getPort()));
            return new Raw() {
                @Override
                public void sendHandshakeBytes(byte[] bytes) throws Exception {
                    ch.write(ByteBuffer.wrap(bytes));
                }

                @Override
                public void handshake(CommOptions o) throws Exception {
                    Handshake.client(new StreamHandshakeChannel(ch), o, 0, l.toString(), null);
                }

                @Override
                public void sendHeader(byte[] bytes) throws Exception {
                    ch.write(ByteBuffer.wrap(bytes));
                }

                @Override
                public byte[] receiveRecord() throws Exception {
                    return new StreamHandshakeChannel(ch).receive();
                }

                @Override
                public void close() throws Exception {
                    ch.close();
                }
            };
        }
    }
}
