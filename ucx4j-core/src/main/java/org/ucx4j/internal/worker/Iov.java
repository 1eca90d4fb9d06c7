package org.ucx4j.internal.worker;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.ucx4j.internal.Libc;

/**
 * Builds UCX scatter-gather lists ({@code ucp_dt_iov_t[]}: a pointer and a length per entry, 16 bytes
 * each, {@code ucp/api/ucp.h}). The list itself lives in native memory owned by the operation, since UCX
 * reads it until the operation completes.
 */
public final class Iov {
    static final int ENTRY_SIZE = 16;

    private Iov() {}

    /** Total bytes of the segments, with overflow checked. */
    public static long total(List<MemorySegment> segments) {
        long total = 0;
        for (MemorySegment s : segments) {
            total = Math.addExact(total, s.byteSize());
        }
        return total;
    }

    /**
     * The list for a send: native segments in place, heap segments copied into staging.
     *
     * @return the native {@code ucp_dt_iov_t} array (owned by {@code op})
     */
    public static MemorySegment forSend(Operation op, List<MemorySegment> segments) {
        return build(op, segments, true);
    }

    /**
     * The list for a receive: only native, writable segments (a heap part cannot be written in place,
     * and copying each part back is what a contiguous receive is for).
     */
    public static MemorySegment forReceive(Operation op, List<MemorySegment> segments) {
        for (MemorySegment s : segments) {
            if (!s.isNative()) {
                throw new IllegalArgumentException("a scatter receive needs native segments; got a heap segment");
            }
            if (s.isReadOnly()) {
                throw new IllegalArgumentException("cannot receive into a read-only segment");
            }
        }
        return build(op, segments, false);
    }

    private static MemorySegment build(Operation op, List<MemorySegment> segments, boolean stageHeap) {
        Objects.requireNonNull(segments, "segments");
        if (segments.isEmpty()) {
            throw new IllegalArgumentException("a scatter-gather list needs at least one segment");
        }
        List<MemorySegment> owned = new ArrayList<>();
        try {
            MemorySegment list = Libc.malloc((long) segments.size() * ENTRY_SIZE);
            owned.add(list);
            for (int i = 0; i < segments.size(); i++) {
                MemorySegment s = Objects.requireNonNull(segments.get(i), "segment " + i);
                long address;
                if (s.isNative()) {
                    address = Buffers.unscoped(s).address();
                } else if (stageHeap) {
                    MemorySegment copy = Libc.malloc(s.byteSize());
                    owned.add(copy);
                    MemorySegment.copy(s, 0, copy, 0, s.byteSize());
                    address = copy.address();
                } else {
                    throw new IllegalArgumentException("heap segment in a scatter receive");
                }
                list.set(JAVA_LONG, (long) i * ENTRY_SIZE, address);
                list.set(JAVA_LONG, (long) i * ENTRY_SIZE + 8, s.byteSize());
            }
            op.extraStaging = owned;
            return MemorySegment.ofAddress(list.address());
        } catch (RuntimeException | Error e) {
            for (MemorySegment block : owned) {
                Libc.free(block);
            }
            throw e;
        }
    }
}
