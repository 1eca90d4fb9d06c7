package org.ucx4j.cli;

/**
 * One ping-pong run, as the client asks the server for it.
 *
 * @param mode latency or bandwidth
 * @param size message size in bytes (at least 1)
 * @param iterations measured messages (latency: round trips)
 * @param warmup messages before measuring
 * @param window sends in flight at once (bandwidth mode)
 */
record PingPongSettings(PingPongMode mode, long size, long iterations, long warmup, int window) {
    /** The largest message the server accepts: it allocates what the client asks for. */
    static final long MAX_SIZE = 1L << 31;
    /** The largest iteration count the server accepts. */
    static final long MAX_ITERATIONS = 1_000_000_000L;
    /** The largest window the server accepts. */
    static final int MAX_WINDOW = 1024;

    /** Checks the bounds; the server calls this on what a peer sent. */
    PingPongSettings {
        if (mode == null) {
            throw new IllegalArgumentException("mode is required");
        }
        if (size < 1 || size > MAX_SIZE) {
            throw new IllegalArgumentException("size must be 1.." + MAX_SIZE + " bytes: " + size);
        }
        if (iterations < 1 || iterations > MAX_ITERATIONS) {
            throw new IllegalArgumentException("iterations must be 1.." + MAX_ITERATIONS + ": " + iterations);
        }
        if (warmup < 0 || warmup > MAX_ITERATIONS) {
            throw new IllegalArgumentException("warm-up must be 0.." + MAX_ITERATIONS + ": " + warmup);
        }
        if (window < 1 || window > MAX_WINDOW) {
            throw new IllegalArgumentException("window must be 1.." + MAX_WINDOW + ": " + window);
        }
    }

    /**
     * The warm-up ucx_perftest uses when none is given: a tenth of the iterations, at most 10000.
     *
     * @param iterations the measured iterations
     * @return the warm-up count
     */
    static long defaultWarmup(long iterations) {
        return Math.min(10_000, (iterations + 9) / 10);
    }

    /**
     * The default iteration count: 10000 round trips for latency; for bandwidth about 4 GiB of data,
     * between 10 and 100000 messages.
     *
     * @param mode the mode
     * @param size the message size
     * @return the count
     */
    static long defaultIterations(PingPongMode mode, long size) {
        if (mode == PingPongMode.LATENCY) {
            return 10_000;
        }
        return Math.clamp((4L << 30) / size, 10, 100_000);
    }

    /** Warm-up plus measured messages. */
    long total() {
        return warmup + iterations;
    }
}
