package org.ucx4j.cli;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * The native buffers of a bandwidth run: the first and last messages each have their own, with a
 * known pattern, so they can be verified; every other message shares one bulk buffer (as ucx_perftest
 * reuses one buffer), since its content is not checked.
 *
 * <p>An experiment's knob, not an option: with {@code UCX4J_BENCH_BULK_BUFFERS=N} in the environment,
 * the other messages are received into N bulk buffers in turn instead (sends still go from the first),
 * as a comm's reader gets a fresh buffer per message (docs/BENCHMARKS.md, "The comm's per-message cost": what a buffer
 * that is not in the cache costs a 1 MiB message).
 *
 * @param first the first message's buffer
 * @param last the last message's buffer
 * @param bulks the other messages' buffers (receives use them in turn, sends the first)
 */
record Buffers(MemorySegment first, MemorySegment last, List<MemorySegment> bulks) {
    static final long FIRST_SEED = 1;
    static final long LAST_SEED = 2;
    /** The most bulk buffers the knob may ask for. */
    static final int MAX_BULK = 256;

    /** Buffers of {@code size} bytes in the benchmark's memory, owned by {@code arena}. */
    static Buffers allocate(BenchMemory memory, Arena arena, long size) {
        int n = bulkBuffers(System.getenv("UCX4J_BENCH_BULK_BUFFERS"));
        List<MemorySegment> bulk = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            bulk.add(memory.allocate(arena, size));
        }
        return new Buffers(memory.allocate(arena, size), memory.allocate(arena, size), List.copyOf(bulk));
    }

    /** The knob's value: 1 when unset. */
    static int bulkBuffers(String knob) {
        if (knob == null || knob.isBlank()) {
            return 1;
        }
        try {
            int n = Integer.parseInt(knob.strip());
            if (n >= 1 && n <= MAX_BULK) {
                return n;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException(
                "UCX4J_BENCH_BULK_BUFFERS must be a whole number 1.." + MAX_BULK + ", not '" + knob + "'");
    }

    /** The bulk buffer sends go from. */
    MemorySegment bulk() {
        return bulks.getFirst();
    }

    /** The buffer a message in {@code slot} is sent from. */
    MemorySegment of(BenchProtocol.Slot slot) {
        return switch (slot) {
            case FIRST -> first;
            case LAST -> last;
            case BULK -> bulk();
        };
    }

    /** The buffer message {@code k}, in {@code slot}, is received into. */
    MemorySegment receiving(BenchProtocol.Slot slot, long k) {
        return slot == BenchProtocol.Slot.BULK ? bulks.get((int) (k % bulks.size())) : of(slot);
    }
}
