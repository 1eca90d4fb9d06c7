package org.ucx4j.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.ucx4j.MemoryKind;

/** Devices, device and pinned memory, copies, streams: the driver binding against a real GPU. */
@Tag("gpu")
class CudaMemoryTest {
    @BeforeEach
    void gpu() {
        GpuRequirement.assumeGpu();
    }

    @Test
    void devicesDescribeThemselves() {
        CudaDevice d = Cuda.device(0);
        assertFalse(d.name().isBlank());
        assertTrue(d.pciBusId().matches("[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\\.[0-9a-f]"), d.pciBusId());
        assertTrue(d.totalMemory() > 1L << 30);
        assertTrue(d.computeCapability().matches("\\d+\\.\\d+"));
        long[] info = d.memoryInfo();
        assertTrue(info[0] > 0 && info[0] <= info[1]);
        GpuTopology t = d.topology();
        assertTrue(t.problem().isEmpty() || !t.problem().get().isBlank());
        assertFalse(t.cpuAffinity().isEmpty(), "NVML gives the GPU's CPUs: " + t);
        assertThrows(
                IllegalArgumentException.class, () -> Cuda.device(Cuda.devices().size()));
        System.out.println(d + " uuid GPU-" + d.uuid() + " cpus " + t.cpuList() + " nvlinks " + t.activeNvLinks());
    }

    @Test
    void hostDeviceHostRoundTripsAreByteExact() {
        CudaDevice d = Cuda.device(0);
        Random random = new Random(42);
        for (long size : new long[] {1, 7, 4096, 65_537, 1 << 20, 64L << 20}) {
            byte[] data = new byte[(int) size];
            random.nextBytes(data);
            try (DeviceMemory m = d.allocate(size);
                    DeviceMemory m2 = d.allocate(size);
                    Arena a = Arena.ofConfined()) {
                assertEquals(MemoryKind.CUDA, Cuda.memoryKindOf(m.segment()));
                assertEquals(d, Cuda.deviceOf(m.segment()).orElseThrow());
                m.copyFrom(MemorySegment.ofArray(data)); // heap source: staged
                Cuda.copy(m2.segment(), m.segment()); // device to device
                MemorySegment back = a.allocate(size);
                m2.copyTo(back);
                assertArrayEquals(data, back.toArray(ValueLayout.JAVA_BYTE), "size " + size);
            }
        }
    }

    @Test
    void freedMemoryIsAClearErrorNotACrash() {
        DeviceMemory m = Cuda.device(0).allocate(4096);
        MemorySegment seg = m.segment();
        m.close();
        m.close(); // twice is harmless
        assertFalse(m.isOpen());
        IllegalStateException e =
                assertThrows(IllegalStateException.class, () -> m.copyFrom(MemorySegment.ofArray(new byte[8])));
        assertTrue(e.getMessage().toLowerCase().contains("closed"), e.getMessage());
        assertThrows(IllegalStateException.class, () -> m.fill((byte) 1));
        try (Arena a = Arena.ofConfined()) {
            assertThrows(IllegalStateException.class, () -> Cuda.copy(a.allocate(8), seg.asSlice(0, 8)));
        }
    }

    @Test
    void tooLargeIsAClearError() {
        CudaDevice d = Cuda.device(0);
        CudaException e = assertThrows(CudaException.class, () -> d.allocate(d.totalMemory() * 4));
        assertTrue(e.getMessage().contains("out of GPU memory"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> {
            try (DeviceMemory m = d.allocate(16)) {
                m.copyFrom(MemorySegment.ofArray(new byte[17]));
            }
        });
    }

    @Test
    void pinnedMemoryAndStreams() {
        CudaDevice d = Cuda.device(0);
        long size = 8L << 20;
        try (PinnedMemory src = d.allocatePinned(size);
                PinnedMemory dst = d.allocatePinned(size);
                DeviceMemory dev = d.allocate(size);
                CudaStream stream = d.newStream()) {
            assertEquals(MemoryKind.HOST, src.kind());
            for (long i = 0; i < size; i += 8) {
                src.segment().set(ValueLayout.JAVA_LONG, i, i * 31);
            }
            float ms = stream.timeMillis(() -> {
                stream.copyAsync(dev.segment(), src.segment());
                stream.copyAsync(dst.segment(), dev.segment());
            });
            assertTrue(ms >= 0);
            assertEquals(-1, src.segment().mismatch(dst.segment()));
            dev.fill((byte) 7);
            dev.copyTo(dst.segment().asSlice(0, 16));
            assertEquals(0x0707070707070707L, dst.segment().get(ValueLayout.JAVA_LONG, 0));
        }
    }

    @Test
    void createCudaContextMakesTheProcessGpuCurrent() {
        Cuda.device(0).makeCurrent();
        assertTrue(Cuda.device(0).hasContext());
    }
}
