package org.ucx4j.cuda;

import java.time.Duration;

/**
 * A snapshot of a {@link SpillStore}'s counters: what each tier holds now, and every move between tiers since
 * the store was created.
 *
 * <p>Threading: immutable.
 *
 * @param deviceBytes bytes of buffers on the device
 * @param hostBytes bytes of buffers in host memory
 * @param diskBytes bytes of buffers on disk
 * @param deviceBuffers buffers on the device
 * @param hostBuffers buffers in host memory
 * @param diskBuffers buffers on disk
 * @param deviceToHost spills from the device to host memory
 * @param hostToDisk spills from host memory to disk
 * @param hostToDevice buffers brought back to the device from host memory
 * @param diskToDevice buffers brought back to the device from disk (read into host memory, then copied)
 * @param justInTimeSpills spills made because a device allocation failed (included in {@code deviceToHost})
 * @param failedSpills moves that failed (a full disk, a missing directory, a copy the driver refused, memory
 *     in use by another thread that could not be freed): the buffer stayed where it was
 */
public record SpillStatistics(
        long deviceBytes,
        long hostBytes,
        long diskBytes,
        int deviceBuffers,
        int hostBuffers,
        int diskBuffers,
        Moves deviceToHost,
        Moves hostToDisk,
        Moves hostToDevice,
        Moves diskToDevice,
        long justInTimeSpills,
        long failedSpills) {

    /**
     * Moves of one direction between two tiers.
     *
     * @param count how many buffers moved
     * @param bytes their bytes
     * @param time the time the moves took, copies and file I/O included
     */
    public record Moves(long count, long bytes, Duration time) {
        /** No moves. */
        public static final Moves NONE = new Moves(0, 0, Duration.ZERO);

        /**
         * This and one more move.
         *
         * @param moved bytes moved
         * @param nanos time taken
         * @return the sum
         */
        Moves plus(long moved, long nanos) {
            return new Moves(count + 1, bytes + moved, time.plusNanos(nanos));
        }

        /**
         * The average speed.
         *
         * @return bytes per second, 0 when nothing moved
         */
        public double bytesPerSecond() {
            long nanos = time.toNanos();
            return nanos == 0 ? 0 : bytes * 1e9 / nanos;
        }
    }
}
