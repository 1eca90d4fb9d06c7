package org.ucx4j.cli;

/**
 * One benchmark run, as the client asks the server for it.
 *
 * @param op the operation
 * @param mode latency, bandwidth or rate
 * @param size message (or put/get) size in bytes (at least 1)
 * @param iterations measured operations (latency: round trips)
 * @param warmup operations before measuring
 * @param window operations in flight at once (bandwidth and rate)
 */
record BenchSettings(BenchOp op, BenchMode mode, long size, long iterations, long warmup, int window) {
    /** The largest size the server accepts: it allocates what the client asks for. */
    static final long MAX_SIZE = 1L << 31;
    /** The largest iteration count the server accepts. */
    static final long MAX_ITERATIONS = 1_000_000_000L;
    /** The largest window the server accepts. */
    static final int MAX_WINDOW = 1024;

    /** Checks the bounds; the server calls this on what a peer sent. */
    BenchSettings {
        if (op == null || mode == null) {
            throw new IllegalArgumentException("op and mode are required");
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
        if (mode == BenchMode.LATENCY && iterations > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException(
                    "latency mode keeps one sample per round trip: at most " + (Integer.MAX_VALUE - 8) + " iterations");
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
     * between 10 and 100000 operations; 100000 messages for rate.
     *
     * @param mode the mode
     * @param size the message size
     * @return the count
     */
    static long defaultIterations(BenchMode mode, long size) {
        return switch (mode) {
            case LATENCY -> 10_000;
            case BANDWIDTH -> Math.clamp((4L << 30) / size, 10, 100_000);
            case RATE -> 100_000;
        };
    }

    /**
     * The default window: 16 operations in flight for bandwidth, 128 for rate (1 for latency, unused).
     *
     * @param mode the mode
     * @return the window
     */
    static int defaultWindow(BenchMode mode) {
        return switch (mode) {
            case LATENCY -> 1;
            case BANDWIDTH -> 16;
            case RATE -> 128;
        };
    }

    /**
     * How many phases end with a verification exchange: latency runs one loop (warm-up included);
     * bandwidth and rate run the warm-up, if any, and the measured phase.
     *
     * @return 1 or 2
     */
    int phases() {
        return mode != BenchMode.LATENCY && warmup > 0 ? 2 : 1;
    }

    /** Warm-up plus measured operations. */
    long total() {
        return warmup + iterations;
    }

    /**
     * The default of {@code --warmup-time}, in seconds. Why a warm-up time besides the warm-up count:
     * the JIT. ucx_perftest's short warm-up (iterations/10) warms caches; a JVM also needs its hot paths
     * compiled, which on this 2-core VM takes a second or two of traffic, the compiler threads competing
     * for the cores. Measured: a 1 KiB ucx:// ping-pong ran 2,000-10,000 round trips/s for its first
     * 1.1 s and 25,000 after 1.9 s, so a 5,000-iteration run with the count's warm-up alone measured
     * mostly the compiler.
     */
    static final double DEFAULT_WARMUP_SECONDS = 2.0;

    /**
     * Calls {@code oneRun} again and again for about {@code nanos} (at least once unless {@code nanos}
     * is 0): the warm-up before a measured run. With {@code announce}, says so on stderr first (a pause
     * of seconds with nothing on screen looks like a hang).
     */
    static void warmUp(long nanos, boolean announce, Runnable oneRun) {
        if (nanos <= 0) {
            return;
        }
        if (announce) {
            System.err.printf(java.util.Locale.ROOT, "warming up for %.1f s (--warmup-time) ...%n", nanos / 1e9);
        }
        long end = System.nanoTime() + nanos;
        do {
            oneRun.run();
        } while (System.nanoTime() - end < 0);
    }

    /**
     * A result's JSON with {@code warmup_seconds} (the {@code --warmup-time} it ran with) after its
     * {@code warmup} count.
     */
    static java.util.Map<String, Object> withWarmupTime(java.util.Map<String, Object> result, long warmupNanos) {
        java.util.Map<String, Object> m = new java.util.LinkedHashMap<>();
        result.forEach((k, v) -> {
            m.put(k, v);
            if (k.equals("warmup")) {
                m.put("warmup_seconds", warmupNanos / 1e9);
            }
        });
        return m;
    }

    /** The help text of {@code --warmup-time}. */
    static final String WARMUP_TIME_HELP = "Before the measured run, repeat short unmeasured runs of the same shape "
            + "for this many seconds, so the JIT has compiled the paths measured (default "
            + DEFAULT_WARMUP_SECONDS + "; 0: none).";

    /**
     * A short run of the same shape for warming up: up to 2000 round trips or 64 MiB for latency, up to
     * 256 MiB (at least a window) for bandwidth and rate; no warm-up of its own.
     */
    BenchSettings forWarmUp() {
        long bytes = Math.max(1, size);
        long n = mode == BenchMode.LATENCY
                ? Math.clamp((64L << 20) / bytes, 1, 2000)
                : Math.max(window, (256L << 20) / bytes);
        return new BenchSettings(op, mode, size, Math.min(iterations, n), 0, window);
    }

    /** The {@code ucx_perftest -t} test this run corresponds to. */
    String perftestName() {
        return op.perftestName(mode);
    }
}
