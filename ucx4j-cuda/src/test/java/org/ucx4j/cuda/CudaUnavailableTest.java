package org.ucx4j.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.ucx4j.MemoryKind;

/** A machine without a GPU (CI): every CUDA entry point fails with the one-sentence reason. */
class CudaUnavailableTest {
    @Test
    void everyEntryPointNamesTheReason() {
        assumeFalse(Cuda.isAvailable(), "this machine has a GPU");
        String reason = Cuda.unavailabilityReason().orElseThrow();
        assertFalse(reason.isBlank());
        assertFalse(reason.contains("\n"), "one sentence: " + reason);
        List<Supplier<?>> calls = List.of(
                Cuda::devices,
                () -> Cuda.device(0),
                Cuda::driverVersion,
                () -> {
                    Cuda.ensureAvailable();
                    return null;
                },
                () -> {
                    try (Arena a = Arena.ofConfined()) {
                        Cuda.copy(a.allocate(8), a.allocate(8));
                    }
                    return null;
                });
        for (Supplier<?> call : calls) {
            CudaException e = assertThrows(CudaException.class, call::get);
            assertEquals("CUDA is not available: " + reason, e.getMessage());
        }
    }

    @Test
    void hostMemoryIsHostWithoutAGpu() {
        assumeFalse(Cuda.isAvailable(), "this machine has a GPU");
        try (Arena a = Arena.ofConfined()) {
            assertEquals(MemoryKind.HOST, Cuda.memoryKindOf(a.allocate(64)));
            assertTrue(Cuda.deviceOf(MemorySegment.ofArray(new byte[4])).isEmpty());
        }
    }
}
