package org.ucx4j;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import org.ucx4j.internal.NativeCalls;
import org.ucx4j.internal.NativeLinker;
import org.ucx4j.internal.Structs;
import org.ucx4j.internal.Ucp;
import org.ucx4j.internal.worker.Buffers;

/**
 * Memory registered with UCX for remote access ({@code ucp_mem_h}): peers that hold its remote key can
 * {@linkplain UcxEndpoint#put put} into it and {@linkplain UcxEndpoint#get get} from it without this
 * process taking part.
 *
 * <p>Made by {@link UcxContext#mapMemory(MemorySegment)} (registers memory the caller owns) or
 * {@link UcxContext#allocateMemory(long)} (UCX allocates and registers it). {@link #packRemoteKey()}
 * gives the bytes a peer needs; ship them any way you like.
 *
 * <p>Ownership: owned by its context (closed with it, before UCX is cleaned up) and by the caller.
 * {@link #close()} is idempotent. For allocated memory, {@link #segment()} stops being usable at close
 * (UCX frees the memory); a mapped segment stays the caller's, only its registration ends. Close the
 * region only when no local operation uses it and peers no longer access it: remote access after close
 * fails on the peer's side (or, with transports that map memory, reads stale data).
 *
 * <p>Threading: safe from any thread. Mapping, packing and unmapping for one context are serialized.
 */
public final class MemoryRegion implements AutoCloseable {
    // ucp_mem_map_params_t field_mask bits and flags (ucp/api/ucp.h, UCX 1.13).
    private static final long MEM_MAP_PARAM_FIELD_ADDRESS = 1L;
    private static final long MEM_MAP_PARAM_FIELD_LENGTH = 1L << 1;
    private static final long MEM_MAP_PARAM_FIELD_FLAGS = 1L << 2;
    private static final int MEM_MAP_ALLOCATE = 1 << 1;
    // ucp_mem_attr_t field_mask bits (ucp/api/ucp_def.h).
    private static final long MEM_ATTR_FIELD_ADDRESS = 1L;
    private static final long MEM_ATTR_FIELD_LENGTH = 1L << 1;

    private final UcxContext context;
    private final MemorySegment memh;
    private final MemorySegment segment;
    /** Scope of {@link #segment} for memory UCX allocated; null for mapped memory. */
    private final Arena allocation;

    private final AtomicBoolean closed = new AtomicBoolean();

    private MemoryRegion(UcxContext context, MemorySegment memh, MemorySegment segment, Arena allocation) {
        this.context = context;
        this.memh = memh;
        this.segment = segment;
        this.allocation = allocation;
    }

    /** Registers {@code segment}; the caller holds the context's region lock. */
    static MemoryRegion map(UcxContext context, MemorySegment contextHandle, MemorySegment segment) {
        Objects.requireNonNull(segment, "segment");
        if (!segment.isNative()) {
            throw new IllegalArgumentException("only native memory can be mapped for remote access (heap memory "
                    + "moves): allocate it from an Arena, or use UcxContext.allocateMemory");
        }
        if (segment.isReadOnly()) {
            throw new IllegalArgumentException("a read-only segment cannot be mapped: peers could write into it");
        }
        if (segment.byteSize() == 0) {
            throw new IllegalArgumentException("cannot map an empty segment");
        }
        MemorySegment address = Buffers.unscoped(segment);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment params = a.allocate(Structs.UCP_MEM_MAP_PARAMS);
            params.set(
                    JAVA_LONG,
                    Structs.offset(Structs.UCP_MEM_MAP_PARAMS, "field_mask"),
                    MEM_MAP_PARAM_FIELD_ADDRESS | MEM_MAP_PARAM_FIELD_LENGTH);
            params.set(ADDRESS, Structs.offset(Structs.UCP_MEM_MAP_PARAMS, "address"), address);
            params.set(JAVA_LONG, Structs.offset(Structs.UCP_MEM_MAP_PARAMS, "length"), segment.byteSize());
            MemorySegment out = a.allocate(ADDRESS);
            int status = NativeCalls.callInt(() -> Ucp.memMap(contextHandle, params, out));
            UcxContext.check(status, "ucp_mem_map", "mapping " + segment.byteSize() + " bytes");
            return new MemoryRegion(context, out.get(ADDRESS, 0), segment, null);
        }
    }

    /** Lets UCX allocate and register {@code size} bytes; the caller holds the context's region lock. */
    static MemoryRegion allocate(UcxContext context, MemorySegment contextHandle, long size) {
        if (size <= 0) {
            throw new IllegalArgumentException("size must be positive, got " + size);
        }
        MemorySegment memh;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment params = a.allocate(Structs.UCP_MEM_MAP_PARAMS);
            params.set(
                    JAVA_LONG,
                    Structs.offset(Structs.UCP_MEM_MAP_PARAMS, "field_mask"),
                    MEM_MAP_PARAM_FIELD_LENGTH | MEM_MAP_PARAM_FIELD_FLAGS);
            params.set(JAVA_LONG, Structs.offset(Structs.UCP_MEM_MAP_PARAMS, "length"), size);
            params.set(JAVA_INT, Structs.offset(Structs.UCP_MEM_MAP_PARAMS, "flags"), MEM_MAP_ALLOCATE);
            MemorySegment out = a.allocate(ADDRESS);
            int status = NativeCalls.callInt(() -> Ucp.memMap(contextHandle, params, out));
            UcxContext.check(status, "ucp_mem_map", "allocating " + size + " bytes");
            memh = out.get(ADDRESS, 0);
            MemorySegment attr = a.allocate(Structs.UCP_MEM_ATTR);
            attr.set(
                    JAVA_LONG,
                    Structs.offset(Structs.UCP_MEM_ATTR, "field_mask"),
                    MEM_ATTR_FIELD_ADDRESS | MEM_ATTR_FIELD_LENGTH);
            status = NativeCalls.callInt(() -> Ucp.memQuery(memh, attr));
            if (status != UcxStatus.OK.code()) {
                unmap(contextHandle, memh);
                throw UcxException.of("ucp_mem_query", status, "after allocating " + size + " bytes");
            }
            MemorySegment base = attr.get(ADDRESS, Structs.offset(Structs.UCP_MEM_ATTR, "address"));
            long length = attr.get(JAVA_LONG, Structs.offset(Structs.UCP_MEM_ATTR, "length"));
            if (base.address() == 0 || length < size) {
                unmap(contextHandle, memh);
                throw new UcxException(
                        "ucp_mem_query",
                        UcxStatus.IO_ERROR.code(),
                        "UCX reported " + length + " bytes at 0x" + Long.toHexString(base.address())
                                + " for an allocation of " + size + " bytes");
            }
            Arena scope = Arena.ofShared();
            return new MemoryRegion(context, memh, NativeLinker.view(base, length, scope), scope);
        }
    }

    private static void unmap(MemorySegment contextHandle, MemorySegment memh) {
        NativeCalls.callInt(() -> Ucp.memUnmap(contextHandle, memh));
    }

    /**
     * The registered memory. For a mapped region, the segment the caller passed; for an allocated one, a
     * view of exactly the length UCX reports (at least the size asked for), unusable after
     * {@link #close()}.
     *
     * @return the memory
     */
    public MemorySegment segment() {
        return segment;
    }

    /**
     * The region's length in bytes.
     *
     * @return {@code segment().byteSize()}
     */
    public long size() {
        return segment.byteSize();
    }

    /**
     * Whether UCX allocated this memory ({@link UcxContext#allocateMemory}) rather than mapping the caller's.
     *
     * @return true for allocated regions
     */
    public boolean isAllocated() {
        return allocation != null;
    }

    /**
     * Whether {@link #close()} was called (or the context closed).
     *
     * @return true once closed
     */
    public boolean isClosed() {
        return closed.get();
    }

    /**
     * Packs the region's remote key ({@code ucp_rkey_pack}) together with its base address and length,
     * in ucx4j's versioned form (see {@link RemoteKey}). A peer passes the bytes to
     * {@link UcxEndpoint#unpackRemoteKey(byte[])} on an endpoint connected to this process.
     *
     * @return a fresh array, owned by the caller; it holds no native resources
     * @throws IllegalStateException when the region is closed
     * @throws UcxException when UCX cannot pack the key
     */
    public byte[] packRemoteKey() {
        return context.withRegionLock(contextHandle -> {
            ensureOpen();
            try (Arena a = Arena.ofConfined()) {
                MemorySegment bufferOut = a.allocate(ADDRESS);
                MemorySegment sizeOut = a.allocate(JAVA_LONG);
                int status = NativeCalls.callInt(() -> Ucp.rkeyPack(contextHandle, memh, bufferOut, sizeOut));
                UcxContext.check(status, "ucp_rkey_pack", "region of " + size() + " bytes");
                MemorySegment buffer = bufferOut.get(ADDRESS, 0);
                byte[] packed;
                try {
                    long n = sizeOut.get(JAVA_LONG, 0);
                    packed = NativeLinker.view(buffer, n).toArray(JAVA_BYTE);
                } finally {
                    NativeCalls.invoke(() -> {
                        Ucp.rkeyBufferRelease(buffer);
                    });
                }
                return RemoteKeyFormat.encode(segment.address(), segment.byteSize(), packed);
            }
        });
    }

    private void ensureOpen() {
        if (closed.get()) {
            throw new IllegalStateException("memory region of " + size() + " bytes is closed");
        }
    }

    /**
     * Unregisters the memory ({@code ucp_mem_unmap}); for allocated memory, UCX frees it and
     * {@link #segment()} becomes unusable. Idempotent; safe from any thread.
     *
     * @throws UcxException when UCX reports a failure to unmap (the region counts as closed anyway)
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        context.withRegionLock(contextHandle -> {
            // Invalidate the Java view before UCX frees the memory under it.
            if (allocation != null) {
                allocation.close();
            }
            int status = NativeCalls.callInt(() -> Ucp.memUnmap(contextHandle, memh));
            context.regionClosed(this);
            UcxContext.check(status, "ucp_mem_unmap", "region of " + segment.byteSize() + " bytes");
            return null;
        });
    }

    @Override
    public String toString() {
        return "MemoryRegion[" + segment.byteSize() + " bytes" + (allocation != null ? ", allocated" : ", mapped")
                + (closed.get() ? ", closed" : "") + "]";
    }
}
