package org.ucx4j.cli;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The three native buffers of a bandwidth run: the first and last messages each have their own, with a
 * known pattern, so they can be verified; every other message shares one bulk buffer (as ucx_perftest
 * reuses one buffer), since its content is not checked.
 *
 * @param first the first message's buffer
 * @param last the last message's buffer
 * @param bulk every other message's buffer
 */
record Buffers(MemorySegment first, MemorySegment last, MemorySegment bulk) {
    static final long FIRST_SEED = 1;
    static final long LAST_SEED = 2;

    /** Buffers of {@code size} bytes in the benchmark's memory, owned by {@code arena}. */
    static Buffers allocate(BenchMemory memory, Arena arena, long size) {
        return new Buffers(memory.allocate(arena, size), memory.allocate(arena, size), memory.allocate(arena, size));
    }

    /** The buffer of a slot. */
    MemorySegment of(BenchProtocol.Slot slot) {
        return switch (slot) {
            case FIRST -> first;
            case LAST -> last;
            case BULK -> bulk;
        };
    }
}
