package org.ucx4j.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.ucx4j.MemoryKind;
import org.ucx4j.MemoryProvider;

/**
 * Frames of a non-host kind without a GPU: a {@link MemoryProvider} of host memory posing as CUDA, so
 * that the routing runs everywhere (CI included): frames of that kind are allocated by the provider on
 * the receiving side, copied out through it on the writing side of byte transports ({@code tcp://}),
 * copied by it in {@code inproc://}; a comm without such a provider refuses them with a clear error. The
 * same paths with real GPU memory are ucx4j-cuda's GpuCommTest.
 */
class NonHostFrameTest {
    /** Host memory that says it is CUDA, counting what passes through it. */
    static final class StandIn implements MemoryProvider {
        final AtomicInteger allocations = new AtomicInteger();
        final AtomicInteger copies = new AtomicInteger();

        @Override
        public MemoryKind kind() {
            return MemoryKind.CUDA;
        }

        @Override
        public MemorySegment allocate(long byteSize, Arena scope) {
            allocations.incrementAndGet();
            return scope.allocate(Math.max(byteSize, 1), 64).asSlice(0, byteSize);
        }

        @Override
        public void copy(MemorySegment dst, MemorySegment src) {
            copies.incrementAndGet();
            MemorySegment.copy(src, 0, dst, 0, src.byteSize());
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp://127.0.0.1:0", "inproc://non-host-frames", "ucx://127.0.0.1:0"})
    void framesOfAProvidersKindGoThroughTheProvider(String uri) throws Exception {
        if (uri.startsWith("ucx")) {
            org.ucx4j.testsupport.Requirements.assumeUcx();
        }
        StandIn serverSide = new StandIn();
        StandIn clientSide = new StandIn();
        CommOptions serverOptions = CommOptions.builder()
                .allocator(FrameAllocator.host().with(serverSide))
                .build();
        CommOptions clientOptions = CommOptions.builder()
                .allocator(FrameAllocator.host().with(clientSide))
                .build();
        byte[] a = new byte[3000];
        byte[] b = new byte[1 << 20];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) (i * 7);
        }
        a[17] = 42;
        try (CommListener listener = Comms.listen(
                        URI.create(uri),
                        comm -> {
                            try (comm) {
                                while (true) {
                                    try (Message m = comm.read()) {
                                        comm.write(m);
                                    }
                                }
                            } catch (CommClosedException closed) {
                                // done
                            }
                        },
                        serverOptions);
                Comm comm = Comms.connect(listener.address(), clientOptions);
                Arena arena = Arena.ofShared()) {
            MemorySegment device = arena.allocate(b.length).copyFrom(MemorySegment.ofArray(b));
            comm.write(Message.of(List.of(Frame.host(MemorySegment.ofArray(a)), new Frame(device, MemoryKind.CUDA))));
            try (Message back = comm.read()) {
                assertEquals(
                        List.of(MemoryKind.HOST, MemoryKind.CUDA),
                        back.frames().stream().map(Frame::kind).toList());
                assertEquals(42, back.frame(0).segment().get(ValueLayout.JAVA_BYTE, 17));
                assertEquals(-1L, back.frame(1).segment().mismatch(MemorySegment.ofArray(b)), uri);
            }
        }
        assertTrue(serverSide.allocations.get() >= 1 && clientSide.allocations.get() >= 1, uri);
        if (uri.startsWith("tcp")) {
            // Staged both ways: copied out by each writer, copied in by each reader.
            assertEquals(2, serverSide.copies.get(), "server: one copy in, one copy out");
            assertEquals(2, clientSide.copies.get(), "client: one copy out, one copy in");
        }
    }

    @Test
    void largeDeviceFramesOverTcpAreStagedInChunksAndArriveWhole() throws Exception {
        // 8 MiB staging chunks: one frame of exactly two, one of two and a bit, one under one.
        long chunk = 8L << 20; // TcpComm.STAGING_CHUNK
        long[] sizes = {2 * chunk, 2 * chunk + 12_345, chunk - 1};
        StandIn serverSide = new StandIn();
        StandIn clientSide = new StandIn();
        try (CommListener listener = Comms.listen(
                        URI.create("tcp://127.0.0.1:0"),
                        comm -> {
                            try (comm;
                                    Message m = comm.read()) {
                                comm.write(m);
                            }
                        },
                        CommOptions.builder()
                                .allocator(FrameAllocator.host().with(serverSide))
                                .build());
                Comm comm = Comms.connect(
                        listener.address(),
                        CommOptions.builder()
                                .allocator(FrameAllocator.host().with(clientSide))
                                .build());
                Arena arena = Arena.ofShared()) {
            List<Frame> frames = new java.util.ArrayList<>();
            for (int f = 0; f < sizes.length; f++) {
                MemorySegment s = arena.allocate(sizes[f]);
                for (long i = 0; i < sizes[f]; i += 4096) {
                    s.set(ValueLayout.JAVA_BYTE, i, (byte) (i / 4096 * 31 + f));
                }
                s.set(ValueLayout.JAVA_BYTE, sizes[f] - 1, (byte) (f + 100));
                frames.add(new Frame(s, MemoryKind.CUDA));
            }
            comm.write(Message.of(frames));
            try (Message back = comm.read(java.time.Duration.ofSeconds(60))) {
                for (int f = 0; f < sizes.length; f++) {
                    assertEquals(MemoryKind.CUDA, back.frame(f).kind());
                    assertEquals(
                            -1L, back.frame(f).segment().mismatch(frames.get(f).segment()), "frame " + f);
                }
            }
        }
        // In: 2 + 3 + 1 chunks at each reader; out: one copy a frame at each writer.
        assertEquals(6 + 3, serverSide.copies.get());
        assertEquals(3 + 6, clientSide.copies.get());
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp://127.0.0.1:0", "inproc://host-only-frames"})
    void aWriterWithoutAProviderForTheKindRefusesTheFrame(String uri) throws Exception {
        try (CommListener listener = Comms.listen(
                        URI.create(uri),
                        comm -> {
                            try (comm) {
                                comm.read().close();
                            } catch (CommException closed) {
                                // done
                            }
                        },
                        CommOptions.defaults());
                Comm comm = Comms.connect(listener.address());
                Arena arena = Arena.ofShared()) {
            Message m = Message.of(new Frame(arena.allocate(64), MemoryKind.CUDA));
            RuntimeException e = assertThrows(RuntimeException.class, () -> comm.write(m));
            String text = String.valueOf(e.getMessage()) + " " + e.getCause();
            assertTrue(text.contains("CUDA") && text.contains("MemoryProvider"), text);
        }
    }
}
