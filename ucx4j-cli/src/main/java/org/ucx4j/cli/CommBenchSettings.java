package org.ucx4j.cli;

/**
 * One run of {@code ucx4j bench --comm}: what the client asks the server for.
 *
 * @param mode latency (ping-pong of one message, echoed) or bandwidth (a stream of messages, one ack)
 * @param frames frames per message (at least 1)
 * @param size bytes per frame (at least 1)
 * @param iterations measured round trips (latency) or messages (bandwidth)
 * @param warmup round trips or messages before measuring
 * @param window bandwidth: messages written and not yet completed at once
 */
record CommBenchSettings(BenchMode mode, int frames, long size, long iterations, long warmup, int window) {
    /** The most frames a message of the benchmark may have. */
    static final int MAX_FRAMES = 65_536;
    /** The largest message (all frames) the server accepts: the client keeps one in memory. */
    static final long MAX_MESSAGE = 1L << 34;

    /** Checks the bounds; the server calls this on what a peer sent. */
    CommBenchSettings {
        if (mode != BenchMode.LATENCY && mode != BenchMode.BANDWIDTH) {
            throw new IllegalArgumentException("--comm measures --mode latency or bandwidth, not " + mode.label());
        }
        if (frames < 1 || frames > MAX_FRAMES) {
            throw new IllegalArgumentException("frames must be 1.." + MAX_FRAMES + ": " + frames);
        }
        if (size < 1 || size > BenchSettings.MAX_SIZE) {
            throw new IllegalArgumentException("size must be 1.." + BenchSettings.MAX_SIZE + " bytes: " + size);
        }
        if (frames * size > MAX_MESSAGE) {
            throw new IllegalArgumentException("a message of " + frames + " frames of " + size
                    + " bytes is larger than " + MAX_MESSAGE + " bytes");
        }
        if (iterations < 1 || iterations > BenchSettings.MAX_ITERATIONS) {
            throw new IllegalArgumentException(
                    "iterations must be 1.." + BenchSettings.MAX_ITERATIONS + ": " + iterations);
        }
        if (warmup < 0 || warmup > BenchSettings.MAX_ITERATIONS) {
            throw new IllegalArgumentException("warm-up must be 0.." + BenchSettings.MAX_ITERATIONS + ": " + warmup);
        }
        if (window < 1 || window > BenchSettings.MAX_WINDOW) {
            throw new IllegalArgumentException("window must be 1.." + BenchSettings.MAX_WINDOW + ": " + window);
        }
        if (mode == BenchMode.LATENCY && iterations > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException(
                    "latency mode keeps one sample per round trip: at most " + (Integer.MAX_VALUE - 8) + " iterations");
        }
    }

    /** Payload bytes of one message. */
    long messageBytes() {
        return frames * size;
    }

    /** Warm-up plus measured operations. */
    long total() {
        return warmup + iterations;
    }

    /**
     * A short run of the same shape for warming up (see {@link BenchSettings#DEFAULT_WARMUP_SECONDS}): up to
     * 2000 round trips or 64 MiB for latency, up to 256 MiB (at least a window) for bandwidth; no
     * warm-up of its own.
     */
    CommBenchSettings forWarmUp() {
        long bytes = Math.max(1, messageBytes());
        long n = mode == BenchMode.LATENCY
                ? Math.clamp((64L << 20) / bytes, 1, 2000)
                : Math.max(window, (256L << 20) / bytes);
        return new CommBenchSettings(mode, frames, size, Math.min(iterations, n), 0, window);
    }
}
