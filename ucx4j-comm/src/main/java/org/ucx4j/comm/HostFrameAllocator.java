package org.ucx4j.comm;

import org.ucx4j.MemoryKind;
import org.ucx4j.HostBufferPool;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** {@link FrameAllocator#host()}. */
final class HostFrameAllocator implements FrameAllocator {
    static final HostFrameAllocator INSTANCE = new HostFrameAllocator();

    private HostFrameAllocator() {}

    @Override
    public MemorySegment allocate(MemoryKind kind, long byteSize, Arena messageScope) {
        if (kind != MemoryKind.HOST) {
            throw new UnsupportedOperationException("the peer sent a " + kind + " frame but this comm's allocator"
                    + " only has host memory: pass a FrameAllocator for " + kind + " (ucx4j-cuda provides one)"
                    + " in CommOptions");
        }
        if (byteSize >= HostBufferPool.MIN_POOLED) {
            // Large frames reuse warm buffers: fresh memory costs more than receiving into it.
            return HostBufferPool.shared().allocate(byteSize, messageScope);
        }
        return messageScope.allocate(byteSize, 64);
    }

    @Override
    public String toString() {
        return "FrameAllocator.host()";
    }
}
