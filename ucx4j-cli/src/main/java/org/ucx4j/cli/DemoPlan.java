package org.ucx4j.cli;

import java.util.List;

/**
 * What {@code ucx4j demo} runs: the frame sizes (one frame per message), and for each size a latency
 * run and a bandwidth run whose counts move about the same number of bytes at every size, within bounds,
 * so that each run takes a second or two on a small machine.
 *
 * @param sizes the frame sizes, ascending
 * @param latencyBytes payload bytes one way that a latency run aims at
 * @param latencyMin the fewest round trips
 * @param latencyMax the most round trips
 * @param bandwidthBytes payload bytes a bandwidth run aims at
 * @param bandwidthMin the fewest messages
 * @param bandwidthMax the most messages
 */
record DemoPlan(
        List<Long> sizes,
        long latencyBytes,
        long latencyMin,
        long latencyMax,
        long bandwidthBytes,
        long bandwidthMin,
        long bandwidthMax) {
    private static final long KI = 1L << 10;
    private static final long MI = 1L << 20;

    /** The window of writes in flight in bandwidth runs. */
    static final int WINDOW = 16;

    /** The full demo: 1 KiB to 256 MiB, about 1-2 minutes on 2 cores. */
    static DemoPlan full() {
        return new DemoPlan(
                List.of(KI, 4 * KI, 64 * KI, MI, 16 * MI, 64 * MI, 256 * MI), 1024 * MI, 4, 8000, 2048 * MI, 12, 40000);
    }

    /** {@code --quick}: three sizes, short runs, about 10 seconds. */
    static DemoPlan quick() {
        return new DemoPlan(List.of(4 * KI, MI, 16 * MI), 128 * MI, 3, 1000, 256 * MI, 4, 4000);
    }

    /** The latency run for a frame size. */
    CommBenchSettings latency(long size) {
        long n = Math.clamp(latencyBytes / size, latencyMin, latencyMax);
        return new CommBenchSettings(BenchMode.LATENCY, 1, size, n, Math.max(1, n / 10), 1);
    }

    /** The bandwidth run for a frame size. */
    CommBenchSettings bandwidth(long size) {
        long n = Math.clamp(bandwidthBytes / size, bandwidthMin, bandwidthMax);
        return new CommBenchSettings(BenchMode.BANDWIDTH, 1, size, n, Math.max(1, n / 10), WINDOW);
    }

    /** How many runs: latency and bandwidth, per size, per transport. */
    int runs(int transports) {
        return sizes.size() * 2 * transports;
    }
}
