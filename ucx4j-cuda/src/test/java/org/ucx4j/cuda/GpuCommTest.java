package org.ucx4j.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.ucx4j.MemoryKind;
import org.ucx4j.comm.Comm;
import org.ucx4j.comm.CommClosedException;
import org.ucx4j.comm.CommListener;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.Comms;
import org.ucx4j.comm.Frame;
import org.ucx4j.comm.FrameAllocator;
import org.ucx4j.comm.Message;

/**
 * Messages of mixed host and GPU frames (as distributed-ucxx's serialized cuDF) over every transport:
 * each frame arrives in the memory its sender named — GPU to GPU over {@code ucx://}, staged through host
 * memory over {@code tcp://} and {@code inproc://}.
 */
@Tag("gpu")
class GpuCommTest {
    @ParameterizedTest
    @ValueSource(strings = {"ucx://127.0.0.1:0", "tcp://127.0.0.1:0", "inproc://gpu-comm-test"})
    void mixedHostAndDeviceFramesArriveInTheirMemory(String uri) throws Exception {
        GpuRequirement.assumeGpuAndUcx();
        try (GpuMemoryPool pool = GpuMemoryPool.create(Cuda.device(0), 0, 2L << 30)) {
            CommOptions options = CommOptions.builder()
                    .allocator(FrameAllocator.host().with(pool))
                    .build();
            Random r = new Random(3);
            byte[] h1 = new byte[1024];
            byte[] d1 = new byte[8 << 20];
            byte[] d2 = new byte[100];
            r.nextBytes(h1);
            r.nextBytes(d1);
            r.nextBytes(d2);
            try (CommListener listener = Comms.listen(
                            java.net.URI.create(uri),
                            comm -> {
                                try (comm) {
                                    while (true) {
                                        try (Message m = comm.read()) {
                                            comm.write(m);
                                        }
                                    }
                                } catch (CommClosedException closed) {
                                    // the client is done
                                }
                            },
                            options);
                    Comm comm = Comms.connect(listener.address(), options);
                    Arena a = Arena.ofShared()) {
                MemorySegment dev1 = pool.allocate(d1.length, a);
                MemorySegment dev2 = pool.allocate(d2.length, a);
                pool.copy(dev1, MemorySegment.ofArray(d1));
                pool.copy(dev2, MemorySegment.ofArray(d2));
                Message out = Message.of(List.of(
                        Frame.host(MemorySegment.ofArray(h1)),
                        new Frame(dev1, MemoryKind.CUDA),
                        Frame.host(MemorySegment.ofArray(new byte[0])),
                        new Frame(dev2, MemoryKind.CUDA)));
                for (int round = 0; round < 3; round++) {
                    comm.write(out);
                    try (Message back = comm.read()) {
                        assertEquals(4, back.frameCount());
                        assertEquals(
                                List.of(MemoryKind.HOST, MemoryKind.CUDA, MemoryKind.HOST, MemoryKind.CUDA),
                                back.frames().stream().map(Frame::kind).toList());
                        assertEquals(
                                MemoryKind.CUDA, Cuda.memoryKindOf(back.frame(1).segment()), uri);
                        assertEquals(
                                MemoryKind.HOST, Cuda.memoryKindOf(back.frame(0).segment()), uri);
                        assertArrayEquals(h1, back.frame(0).segment().toArray(ValueLayout.JAVA_BYTE));
                        byte[] got = new byte[d1.length];
                        pool.copy(MemorySegment.ofArray(got), back.frame(1).segment());
                        assertArrayEquals(d1, got, uri);
                        byte[] got2 = new byte[d2.length];
                        pool.copy(MemorySegment.ofArray(got2), back.frame(3).segment());
                        assertArrayEquals(d2, got2, uri);
                    }
                }
            }
        }
    }
}
