package org.ucx4j.comm;

/**
 * Where a frame's bytes live. The wire carries the kind as one byte (docs/WIRE.md) so that the
 * receiver allocates each frame in the same kind of memory.
 *
 * <p>Threading: an immutable enum.
 */
public enum MemoryKind {
    /** Host (CPU) memory: a native or heap segment the JVM can read. */
    HOST(0),
    /** CUDA device memory: a segment whose address is a device pointer; the JVM must not read it. */
    CUDA(1);

    private final int wireCode;

    MemoryKind(int wireCode) {
        this.wireCode = wireCode;
    }

    /**
     * The byte that stands for this kind on the wire.
     *
     * @return 0 for host, 1 for CUDA
     */
    public int wireCode() {
        return wireCode;
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
