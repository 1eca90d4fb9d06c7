package org.ucx4j.cli;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.ucx4j.MemoryKind;
import org.ucx4j.MemoryRegion;
import org.ucx4j.UcxContext;
import org.ucx4j.cuda.Cuda;
import org.ucx4j.cuda.CudaDevice;
import org.ucx4j.cuda.GpuMemoryPool;

/**
 * Where a benchmark's buffers live ({@code --memory host|cuda}, {@code --gpu N}), and the few things
 * the benchmark does to their bytes — fill a pattern, zero, verify — done through a host copy for GPU
 * memory, which Java cannot touch. GPU buffers come from a {@link GpuMemoryPool} of the chosen device, so
 * the peer maps their slab once.
 *
 * <p>One per process (the command's choice), set before the run by {@link #use}. Threading: safe from
 * any thread.
 */
final class BenchMemory {
    private static volatile BenchMemory current = new BenchMemory(MemoryKind.HOST, null, 0, true);

    private final MemoryKind kind;
    private final GpuMemoryPool pool;
    private final int peerGpu;
    private final boolean declare;

    private BenchMemory(MemoryKind kind, GpuMemoryPool pool, int peerGpu, boolean declare) {
        this.kind = kind;
        this.pool = pool;
        this.peerGpu = peerGpu;
        this.declare = declare;
    }

    /**
     * Chooses this process's benchmark memory.
     *
     * @param kind host or CUDA
     * @param gpu the CUDA ordinal for CUDA memory
     * @param peerGpu the CUDA ordinal the server this process starts should use
     * @param declare whether tag operations tell UCX the buffers' kind ({@link #declared})
     * @throws org.ucx4j.cuda.CudaException when CUDA memory is asked for where there is none (the message says why)
     */
    static void use(MemoryKind kind, int gpu, int peerGpu, boolean declare) {
        if (kind == MemoryKind.HOST) {
            current = new BenchMemory(kind, null, peerGpu, declare);
            return;
        }
        Cuda.ensureAvailable();
        CudaDevice device = Cuda.device(gpu);
        device.makeCurrent();
        current = new BenchMemory(kind, GpuMemoryPool.create(device, 0, device.totalMemory()), peerGpu, declare);
    }

    /** The options that give a server this process starts the same memory (on the peer's GPU). */
    java.util.List<String> peerArgs() {
        java.util.List<String> args = new java.util.ArrayList<>();
        if (kind != MemoryKind.HOST) {
            args.addAll(java.util.List.of("--memory", "cuda", "--gpu", Integer.toString(peerGpu)));
        }
        if (!declare) {
            args.add("--detect-memory");
        }
        return args;
    }

    static BenchMemory current() {
        return current;
    }

    MemoryKind kind() {
        return kind;
    }

    /**
     * The kind tag operations declare to UCX for the buffers of {@link #allocate}, or null when UCX is
     * to detect it on every operation ({@code --detect-memory}, or GPU memory). The bench allocated its
     * host buffers, so it knows; declaring skips UCX's memory-type detection, which on a machine with
     * CUDA can send a JVM's host buffer down UCX's slow path on every operation (docs/CONFIGURATION.md,
     * "Declare the memory"). GPU memory is left to UCX: its cache knows CUDA allocations (no slow path),
     * and a declared type would come without the GPU it lives on.
     */
    MemoryKind declared() {
        return declare && kind == MemoryKind.HOST ? kind : null;
    }

    /** The pool of GPU memory, for frame and active-message allocators; null for host memory. */
    GpuMemoryPool pool() {
        return pool;
    }

    /** A buffer of {@code size} bytes that {@code arena} owns (page aligned on the host). */
    MemorySegment allocate(Arena arena, long size) {
        return pool == null ? arena.allocate(Math.max(size, 1), 4096).asSlice(0, size) : pool.allocate(size, arena);
    }

    /** A region for put/get of {@code size} bytes, mapped for RMA. */
    MemoryRegion region(UcxContext context, Arena arena, long size) {
        return pool == null ? context.allocateMemory(size) : context.mapMemory(allocate(arena, size));
    }

    void fill(MemorySegment buf, long seed) {
        if (pool == null) {
            BenchProtocol.fill(buf, seed);
            return;
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment host = a.allocate(Math.max(1, buf.byteSize()), 64).asSlice(0, buf.byteSize());
            BenchProtocol.fill(host, seed);
            Cuda.copy(buf, host);
        }
    }

    void zero(MemorySegment buf) {
        if (pool == null) {
            buf.fill((byte) 0);
            return;
        }
        Cuda.fill(buf, (byte) 0);
    }

    void verify(MemorySegment buf, long seed, String what) {
        if (pool == null) {
            BenchProtocol.verify(buf, seed, what);
            return;
        }
        try (Arena a = Arena.ofConfined()) {
            BenchProtocol.verify(toHost(buf, a), seed, what);
        }
    }

    boolean matches(MemorySegment buf, long seed) {
        if (pool == null) {
            return BenchProtocol.matches(buf, seed);
        }
        try (Arena a = Arena.ofConfined()) {
            return BenchProtocol.matches(toHost(buf, a), seed);
        }
    }

    String describeMismatch(MemorySegment buf, long seed) {
        if (pool == null) {
            return BenchProtocol.describeMismatch(buf, seed);
        }
        try (Arena a = Arena.ofConfined()) {
            return BenchProtocol.describeMismatch(toHost(buf, a), seed);
        }
    }

    /** Copies between two buffers of this memory, or from host memory into it. */
    void copy(MemorySegment dst, MemorySegment src) {
        if (pool == null) {
            MemorySegment.copy(src, 0, dst, 0, src.byteSize());
        } else {
            Cuda.copy(dst, src);
        }
    }

    private static MemorySegment toHost(MemorySegment buf, Arena a) {
        MemorySegment host = a.allocate(Math.max(1, buf.byteSize()), 64).asSlice(0, buf.byteSize());
        Cuda.copy(host, buf);
        return host;
    }
}
