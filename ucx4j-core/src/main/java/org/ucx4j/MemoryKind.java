package org.ucx4j;

/**
 * Where a buffer's bytes live. UCX finds the kind of each buffer it is given by itself (its memory-type
 * cache, or the driver); ucx4j uses the kind to choose allocators (active messages, comm frames) and
 * copies, and ucx4j-comm's wire format carries it as one byte (docs/WIRE.md) so that the receiver
 * allocates each frame in the same kind of memory.
 *
 * <p>A {@link java.lang.foreign.MemorySegment} of kind {@link #CUDA} is a device address: Java code
 * must never read or write it (that would fault or read garbage); only UCX and the CUDA driver touch
 * it. ucx4j-cuda's {@code DeviceMemory} hands such segments out.
 *
 * <p>Threading: an immutable enum.
 */
public enum MemoryKind {
    /** Host (CPU) memory: a native or heap segment the JVM can read. */
    HOST(0, 0),
    /** CUDA device memory: a segment whose address is a device pointer; the JVM must not read it. */
    CUDA(1, 1);

    private final int wireCode;
    private final int ucsMemoryType;

    MemoryKind(int wireCode, int ucsMemoryType) {
        this.wireCode = wireCode;
        this.ucsMemoryType = ucsMemoryType;
    }

    /**
     * The byte that stands for this kind on ucx4j-comm's wire.
     *
     * @return 0 for host, 1 for CUDA
     */
    public int wireCode() {
        return wireCode;
    }

    /**
     * UCX's {@code ucs_memory_type_t} value for this kind ({@code UCS_MEMORY_TYPE_HOST} = 0,
     * {@code UCS_MEMORY_TYPE_CUDA} = 1, ucs/memory/memory_type.h, the same from UCX 1.13 to 1.22).
     *
     * @return the UCX memory type
     */
    public int ucsMemoryType() {
        return ucsMemoryType;
    }

    /**
     * The kind a wire byte stands for.
     *
     * @param code the byte, as an unsigned value
     * @return the kind
     * @throws IllegalArgumentException for a code no kind has
     */
    public static MemoryKind fromWireCode(int code) {
        for (MemoryKind k : values()) {
            if (k.wireCode == code) {
                return k;
            }
        }
        throw new IllegalArgumentException("unknown memory kind code " + code + " (known: 0 host, 1 cuda)");
    }
}
