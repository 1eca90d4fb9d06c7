package org.ucx4j.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.CompletableFuture;
import org.ucx4j.AmAllocator;
import org.ucx4j.MemoryKind;
import org.ucx4j.MemoryRegion;
import org.ucx4j.UcxContext;
import org.ucx4j.UcxEndpoint;
import org.ucx4j.UcxListener;
import org.ucx4j.UcxWorker;

/**
 * The other process of {@link GpuTransferTest}: listens, prints {@code PORT n}, and then serves the
 * commands its one client sends on tag {@link #CONTROL} (two longs: the command and a size), always in
 * GPU memory of its own GPU (CUDA ordinal 0, which the test rotates so that each process has its own
 * where two are visible).
 */
public final class GpuPeerMain {
    static final long CONTROL = 1;
    static final long DATA_IN = 2;
    static final long DATA_OUT = 3;
    static final long KEY = 5;
    static final long VERDICT = 6;
    static final long TAG_ECHO = 1;
    static final long AM_ECHO = 2;
    static final long REGION = 3;
    static final long CHECK_REGION = 4;
    static final long EXIT = 9;

    private GpuPeerMain() {}

    /** The pattern of a region: byte i is {@code i * 31 + seed}. */
    static byte pattern(long i, int seed) {
        return (byte) (i * 31 + seed);
    }

    public static void main(String[] args) throws Exception {
        CudaDevice gpu = Cuda.device(0);
        try (UcxContext context = UcxContext.create();
                UcxWorker worker = context.newWorker();
                GpuMemoryPool pool = GpuMemoryPool.create(gpu, 0, 4L << 30);
                Arena control = Arena.ofShared()) {
            worker.setAmAllocator(MemoryKind.CUDA, AmAllocator.of(pool));
            CompletableFuture<UcxEndpoint> accepted = new CompletableFuture<>();
            UcxListener listener = worker.listen(0, accepted::complete);
            System.out.println("PORT " + listener.port());
            System.out.println("GPU " + gpu);
            UcxEndpoint ep = accepted.join();
            MemorySegment cmd = control.allocate(16, 8);
            Arena region = null;
            MemoryRegion mapped = null;
            while (true) {
                ep.worker().tagRecv(cmd, CONTROL, -1L, ep);
                long op = cmd.get(ValueLayout.JAVA_LONG, 0);
                long size = cmd.get(ValueLayout.JAVA_LONG, 8);
                if (op == TAG_ECHO) {
                    try (Arena a = Arena.ofShared()) {
                        MemorySegment buf = pool.allocate(size, a);
                        ep.worker().tagRecv(buf, DATA_IN, -1L, ep);
                        ep.tagSend(buf, DATA_OUT);
                    }
                } else if (op == AM_ECHO) {
                    MemorySegment body = ep.amRecv();
                    System.out.println("AM " + body.byteSize() + " " + Cuda.memoryKindOf(body));
                    worker.await(ep.amSendAsync(body, Cuda.memoryKindOf(body)));
                } else if (op == REGION) {
                    region = Arena.ofShared();
                    MemorySegment mem = pool.allocate(size, region);
                    try (Arena a = Arena.ofConfined()) {
                        MemorySegment host = a.allocate(size);
                        for (long i = 0; i < size; i++) {
                            host.set(ValueLayout.JAVA_BYTE, i, pattern(i, 7));
                        }
                        Cuda.copy(mem, host);
                    }
                    mapped = context.mapMemory(mem);
                    ep.tagSend(mapped.packRemoteKey(), KEY);
                } else if (op == CHECK_REGION) {
                    boolean ok;
                    try (Arena a = Arena.ofConfined()) {
                        MemorySegment host = a.allocate(mapped.size());
                        Cuda.copy(host, mapped.segment());
                        ok = true;
                        for (long i = 0; i < host.byteSize(); i++) {
                            ok &= host.get(ValueLayout.JAVA_BYTE, i) == pattern(i, (int) size);
                        }
                    }
                    ep.tagSend(new byte[] {(byte) (ok ? 1 : 0)}, VERDICT);
                } else {
                    break;
                }
            }
            if (mapped != null) {
                mapped.close();
                region.close();
            }
            ep.close();
        }
    }
}
