package org.ucx4j.cli;

import java.util.Arrays;

/**
 * Percentiles of round-trip times, reported as one-way latency (half a round trip), as ucx_perftest
 * reports it.
 */
final class LatencyStats {
    private final long[] sortedRoundTripNanos;
    private final long totalNanos;

    /**
     * @param roundTripNanos one sample per measured round trip (copied)
     */
    LatencyStats(long[] roundTripNanos) {
        if (roundTripNanos.length == 0) {
            throw new IllegalArgumentException("no samples");
        }
        this.sortedRoundTripNanos = roundTripNanos.clone();
        Arrays.sort(sortedRoundTripNanos);
        long sum = 0;
        for (long s : roundTripNanos) {
            sum += s;
        }
        this.totalNanos = sum;
    }

    /**
     * One-way latency at a percentile, by the nearest-rank method.
     *
     * @param percentile 0 < p <= 100
     * @return microseconds
     */
    double oneWayMicros(double percentile) {
        int n = sortedRoundTripNanos.length;
        int rank = (int) Math.ceil(percentile / 100.0 * n);
        int index = Math.clamp(rank - 1, 0, n - 1);
        return sortedRoundTripNanos[index] / 2.0 / 1000.0;
    }

    /** Mean one-way latency in microseconds. */
    double meanOneWayMicros() {
        return totalNanos / (double) sortedRoundTripNanos.length / 2.0 / 1000.0;
    }

    /** How many samples. */
    int count() {
        return sortedRoundTripNanos.length;
    }
}
