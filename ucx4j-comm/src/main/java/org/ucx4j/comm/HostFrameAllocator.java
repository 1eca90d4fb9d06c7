package org.ucx4j.comm;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.ucx4j.HostBufferPool;
import org.ucx4j.MemoryKind;

/** {@link FrameAllocator#host()}. */
final class HostFrameAllocator implements FrameAllocator {
    static final HostFrameAllocator INSTANCE = new HostFrameAllocator();

    private HostFrameAllocator() {}

    @Override
    public MemorySegment allocate(MemoryKind kind, long byteSize, Arena messageScope) {
        if (kind != MemoryKind.HOST) {
            throw noKind(kind);
        }
        if (byteSize >= HostBufferPool.MIN_POOLED) {
            // Large frames reuse warm buffers: fresh memory costs more than receiving into it.
            return HostBufferPool.shared().allocate(byteSize, messageScope);
        }
        return messageScope.allocate(byteSize, 64);
    }

    static UnsupportedOperationException noKind(MemoryKind kind) {
        return new UnsupportedOperationException("a " + kind + " frame, but this comm's allocator only has host"
                + " memory: pass FrameAllocator.host().with(<a " + kind + " MemoryProvider, e.g. ucx4j-cuda's"
                + " GpuMemoryPool>) in CommOptions");
    }

    @Override
    public String toString() {
        return "FrameAllocator.host()";
    }
}
